#!/bin/bash
# SevenNet, batched evaluation and small-system MD on one GPU (issues 76-78), each phase only while
# time is left: a CUDA build made on the CPU machine (scripts/gpu/carry-build.sh, then
# `tar cJf build-cmp/build-gpu.tar.xz -C build-carry .`), LAMMPS from .deps/lammps-src.tar.xz, the
# sevenn/batch GPU CTests beside compute-sanitizer memcheck, then 7net-0 against sevenn 0.13
# (bench/bench_sevenn.py: OpenEquivariance, cuEquivariance, e3nn), bench_batch.py, LAMMPS
# ms/step, the oxide, the MD protocol; with .models/nequix/nequix-mp-1.nqx carried, bench_batch
# and the MD protocol for it too (beside nequix's JAX calculator when its wheels are carried). cuEquivariance runs only where its tar.xz is carried (it and
# nequix-mp-1 do not fit in one call together). Carry (about 62 MiB with the tree):
#   build-cmp/build-gpu.tar.xz  the build above
#   build-cmp/sevenn-lite       the sevenn 0.13.0 package, checkpoints without optimizer state
#                               (7net-l3i5 too: 4.8 MB; 62 MiB in all with it)
#   build-cmp/peer              ase, braceexpand, e3nn 0.6, matscipy, nanobind, opt_einsum(_fx),
#                               platformdirs, torch_geometric, tqdm, nequix 0.4.5, e3nn_jax,
#                               jraph, nequip 0.19.1 and its hydra/omegaconf/antlr4/lmdb wheels
#                               (py3.12; scripts/gpu/carry-peers.sh makes them and sevenn-lite), the
#                               OpenEquivariance 0.7.0 sdist, cuEquivariance 0.9.1 unpacked in
#                               cueq-0.9.1.tar.xz (Triton caches of other GPUs than sm_90 left out)
#   .deps                       libcjson and LAMMPS' source (lammps-src.tar.xz)
# CTESTS= the CTest regex (default 'sevenn|batch'). Run it as
#   bash scripts/gpu/gpu-sevenn-batch.sh 2>&1 | tee $OUT/run.log   (a call cut by its limit keeps it)
# PHASES= a comma-separated choice of the phases below (oeq, l3i5-oeq, cueq, l3i5-cueq, batch,
# batch-nequix, lammps, md, oxide, md-nequix, lammps-nequix, md-float64, lammps-float64, largest,
# oam-l, md-oam-l, lammps-oam-l, md-oam-l-float64, lammps-oam-l-float64, drift-oam-l-float32,
# drift-oam-l-float64, e3nn); CTESTS=none runs no CTest. The OAM-L-like phases need no sevenn:
# carry build-cmp/peer (with nequip's wheels: scripts/gpu/carry-peers.sh) and leave sevenn-lite.
# Writes $OUT/ctest.log, sanitize.txt, bench.jsonl, batch.jsonl, lammps.jsonl, md.jsonl, largest.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
left() { [ $(el) -lt $1 ] || { echo "SKIPPED (time): $2"; return 1; }; }
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u
mkdir -p build-gpu && tar xJf build-cmp/build-gpu.tar.xz -C build-gpu
tar xJf .deps/lammps-src.tar.xz
. scripts/gpu/device-deps.sh
lmp_build=/tmp/fnq-lammps
( cmake -S .lammps-src/cmake -B "$lmp_build" -DCMAKE_BUILD_TYPE=Release -DBUILD_MPI=on \
    -DPKG_PLUGIN=on -DPKG_MANYBODY=on -DPKG_MOLECULE=on -DBUILD_SHARED_LIBS=on \
    -DLAMMPS_EXCEPTIONS=on -DWITH_JPEG=off -DWITH_PNG=off -DWITH_GZIP=off -DWITH_FFMPEG=off >/dev/null &&
  cmake --build "$lmp_build" -j 12 >/dev/null || echo "LAMMPS BUILD FAILED" ) &
lmp_pid=$!
export FNQ_NEQUIP_WHEELS=build-cmp/peer
. scripts/gpu/gpu-nequip-env.sh
export PYTHONPATH=$PWD/build-cmp/sevenn-lite:$PYTHONPATH FNQ_SEVENN_DIR=$PWD/build-cmp/sevenn-lite/sevenn
export FUSEDNEQUIP_MODEL_DIR=$PWD/.models
# the CTests set their own PYTHONPATH: the carried wheels (ase for gpu_batch) reach them through
# a .pth file in the user site (2026-12-07: gpu_batch skipped for want of ase)
site=$(python3 -m site --user-site) && mkdir -p "$site" && echo /tmp/site-nequip > "$site/fnq-carried.pth"
wait $lmp_pid
echo "setup done at $(el) s"; tail -2 /tmp/oeq-build.log 2>/dev/null
cli=build-gpu/cli/fusednequip
ck=$FNQ_SEVENN_DIR/pretrained_potentials
[ -d $ck ] && for m in "SevenNet_0__11Jul2024/checkpoint_sevennet_0.pth 7net0" "SevenNet_0__22May2024/checkpoint_sevennet_0.pth 7net0may" "SevenNet_MF_0/checkpoint_sevennet_mf_0.pth mf0"; do
  set -- $m; python3 -m fusednequip.convert $ck/$1 /tmp/$2.fnqm > /dev/null || echo "convert $1 FAILED"
done
l3ck=$ck/SevenNet_l3i5/checkpoint_l3i5.pth  # carried where the call has room for it
[ -f $l3ck ] && { python3 -m fusednequip.convert $l3ck /tmp/l3i5.fnqm > /dev/null || echo "convert l3i5 FAILED"; }
fx=tests/fixtures/sevenn
san() {  # tool gemm dtype model xyz [args]
  local tool=$1 g=$2 dt=$3 m=$4 x=$5; shift 5
  FNQ_NODE_GEMM=$g timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $cli eval --dtype $dt --device cuda "$@" $m $x > /tmp/san-$tool-$g.out 2>&1
  echo "$tool $(basename $m) $(basename $x) gemm=$g $dt $* rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san-$tool-$g.out | tr '\n' ' ')"
  grep -m3 -E 'Invalid|Race|Error' /tmp/san-$tool-$g.out
}
[ "${CTESTS:-}" = none ] || ( san memcheck 0 float32 /tmp/mf0.fnqm $fx/sevenn.triclinic.xyz --modal PBE
  san memcheck 1 float64 /tmp/7net0may.fnqm $fx/sevenn.oxide.xyz ) > $OUT/sanitize.txt 2>&1 &
san_pid=$!
[ "${CTESTS:-}" = none ] || LD_PRELOAD= ctest --test-dir build-gpu -R "${CTESTS:-sevenn|batch}" -L gpu -j 6 --output-on-failure --timeout 200 > $OUT/ctest.log 2>&1
echo "ctest rc=$? at $(el) s"; grep -E 'Test +#|tests passed|worst|FAIL|Error' $OUT/ctest.log | head -40
wait $san_pid; cat $OUT/sanitize.txt; echo "sanitizers done at $(el) s"
B() { timeout $T python3 bench/bench_sevenn.py --min-seconds 0.5 --max-repeats 5 "$@" 2>&1 | grep -E '^\{|Error|error|Traceback|did not' | tee -a $OUT/bench.jsonl; echo "  ($* done at $(el) s)"; }
nqx=.models/nequix/nequix-mp-1.nqx
cueq=$(ls build-cmp/peer/cueq-*.tar.xz 2>/dev/null)
# each phase starts only when its time limit T still fits before the call's end (END s)
END=${END:-555}
go() { T=$1; left $(( END - T )) "$2"; }
bb() { timeout $T python3 bench/bench_batch.py --device cuda --sizes 1,2,3 --total-atoms 32768 --min-seconds 0.5 --max-repeats 5 "$@" 2>&1 | grep -E '^\{|rror' | tee -a $OUT/batch.jsonl; }
lmp() { timeout $T python3 bench/bench_lammps.py --lmp /tmp/fnq-lammps/lmp --steps 20 \
  --plugin build-gpu/pair_style/fusednequipplugin.so --device cuda --configs 1x1 "$@" 2>&1 | grep -E '^\{|rror' | tee -a $OUT/lammps.jsonl; }
md() { timeout $T python3 bench/bench_md_protocol.py --device cuda --steps 300 --warmup 30 "$@" 2>&1 | grep -E '^\{|rror' | tee -a $OUT/md.jsonl; }
peer=; python3 -c "import nequix.calculator" 2> /dev/null && peer="--peer nequix-jax"
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX beside our library on one GPU
# PHASES= the phases to run, comma-separated (default: all, in this order)
want() { [ "${PHASES:-all}" = all ] || [[ ",$PHASES," == *",$1,"* ]]; }
ph() { want "$1" && go "$2" "$1"; }  # phase name, its time limit
l3=/tmp/l3i5.fnqm; [ -f $l3 ] || l3=
ph oeq 100 && B --model 7net-0 --fnqm /tmp/7net0.fnqm --accelerator oeq --sizes 4,8,10,16,20
[ -n "$l3" ] && ph l3i5-oeq 100 && B --model 7net-l3i5 --fnqm $l3 --accelerator oeq --sizes 4,8,10,16,20
[ -n "$cueq" ] && ph cueq 100 && B --model 7net-0 --fnqm /tmp/7net0.fnqm --accelerator cueq --sizes 4,8,10,16,20
[ -n "$cueq" ] && [ -n "$l3" ] && ph l3i5-cueq 100 && B --model 7net-l3i5 --fnqm $l3 --accelerator cueq --sizes 4,8,10,16,20
ph batch 45 && bb --model /tmp/7net0.fnqm
[ -f $nqx ] && ph batch-nequix 45 && bb --model $nqx
ph lammps 40 && lmp --model /tmp/7net0.fnqm --dtype float32 --cells 4,10,20
ph md 25 && md --model /tmp/7net0.fnqm --dtype float32
ph oxide 60 && B --model 7net-0 --fnqm /tmp/7net0.fnqm --accelerator oeq --structure oxide --sizes 4,8,10,16
[ -f $nqx ] && ph md-nequix 40 && md --model $nqx --dtype float32 --systems oxide,ionic $peer
[ -f $nqx ] && ph lammps-nequix 20 && lmp --model $nqx --dtype float32 --cells 3,4,5
ph md-float64 15 && md --model /tmp/7net0.fnqm --dtype float64 --systems oxide,ionic
ph lammps-float64 15 && lmp --model /tmp/7net0.fnqm --dtype float64 --cells 3,4
# the largest 7net-0 crystal on this GPU: 3 LAMMPS steps at each size, the memory line kept
ph largest 120 && printf "plugin load %s\ninclude %s\n" "$PWD/build-gpu/pair_style/fusednequipplugin.so" \
  "$PWD/examples/si-diamond/in.si-nvt" > /tmp/in.largest && for n in ${LARGEST:-50 70 90}; do
  FNQ_VERBOSE=1 timeout 60 /tmp/fnq-lammps/lmp -in /tmp/in.largest -log none -var steps 3 \
    -var cells $n -var device cuda -var dtype float32 -var model /tmp/7net0.fnqm > /tmp/largest-$n.log 2>&1
  echo "largest cells $n ($((8*n*n*n)) atoms) rc=$?"; grep -E "Loop time|ERROR|cuda memory|does not fit" /tmp/largest-$n.log | head -4
done 2>&1 | tee -a $OUT/largest.txt
# issue 78: the OAM-L-like NequIP model made here by nequip 0.19.1 (carried wheels; too large to
# carry: 77 MB) for the MD protocol's species, compiled by nequip-compile for nequip's own ASE
# calculator, then the protocol beside it, LAMMPS at 216-1,000 atoms and NVE at 0.5 fs
oaml=/tmp/oaml/nequip-peer.fnqm
ph oam-l 150 && { timeout $T python3 bench/make_nequip_peer_model.py make /tmp/oaml --arch oam-l \
    --species Si,O,H,Mg,Cu,Li > /tmp/oaml-make.log 2>&1; echo "oam-l make rc=$? at $(el) s"
  tail -3 /tmp/oaml-make.log | cut -c1-300
  timeout $T python3 bench/make_nequip_peer_model.py compile /tmp/oaml --target ase > /tmp/oaml-compile.log 2>&1
  echo "oam-l compile rc=$? at $(el) s"; ls -la /tmp/oaml; } 2>&1 | tee -a $OUT/oaml.txt
oamlpt=$(ls /tmp/oaml/nequip-peer-oeq-ase.nequip.pt2 2>/dev/null)
[ -f $oaml ] && ph md-oam-l 60 && md --model $oaml --dtype float32 ${oamlpt:+--peer nequip-compiled --peer-model $oamlpt}
[ -f $oaml ] && ph lammps-oam-l 40 && lmp --model $oaml --dtype float32 --cells 3,4,5
[ -f $oaml ] && ph md-oam-l-float64 40 && md --model $oaml --dtype float64
[ -f $oaml ] && ph lammps-oam-l-float64 40 && lmp --model $oaml --dtype float64 --cells 3,4,5
for dt in float32 float64; do
  [ -f $oaml ] && ph drift-oam-l-$dt 120 && timeout $T python3 bench/bench_drift.py --model $oaml \
    --dtype $dt --cells 4 --steps 100000 --chunk 10000 --timestep-fs 0.5 --thermo 500 \
    --lmp /tmp/fnq-lammps/lmp --plugin build-gpu/pair_style/fusednequipplugin.so \
    --max-seconds $((T - 20)) --results-dir $OUT 2>&1 | tail -14 | tee -a $OUT/drift.txt
done
ph e3nn 20 && B --model 7net-0 --fnqm /tmp/7net0.fnqm --accelerator e3nn --sizes 4,8
echo "all done at $(el) s"
