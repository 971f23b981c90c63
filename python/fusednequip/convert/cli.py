"""fusednequip-convert: NequIP model files -> .fnqm (docs/model-format.md).

The kind of input is recognised from its contents, not its name:
  * a TorchScript archive with nequip 0.5/0.6 metadata (`nequip-deploy build`): torch only;
  * a torch.package archive (`nequip-package build`, .nequip.zip) or a training checkpoint
    (.ckpt) of nequip >= 0.7: needs the nequip package;
  * a SevenNet checkpoint (sevenn's checkpoint_*.pth), or a keyword of the checkpoints inside
    the installed sevenn (7net-0, 7net-l3i5, ...): torch only.
Exit status: 0 converted, 1 usage error, 2 the file cannot be converted (message on stderr).
Loading runs the code the file carries (torch.package, pickle): convert what you trust.
"""
import argparse
import os
import sys
import zipfile

from .errors import ConversionError


def detect(path):
    """'classic' | 'current' | 'sevenn' from the archive's member names (and a checkpoint's
    pickle)."""
    if not os.path.isfile(path):
        raise ConversionError(f"{path}: no such file")
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError) as err:
        raise ConversionError(f"{path}: not a NequIP model file: expected a zip archive "
                              f"(deployed .pth, .nequip.zip or .ckpt), {err}") from err
    if bad is not None:
        raise ConversionError(f"{path}: archive member {bad} is corrupt (CRC mismatch)")
    if any(n.endswith("/code/__torch__.py") or "/code/__torch__/" in n for n in names):
        if any(n.endswith("/extra/config") for n in names):
            return "classic"
        raise ConversionError(f"{path}: a TorchScript file without nequip 0.5/0.6 'config' "
                              f"metadata (a nequip >= 0.7 compiled .nequip.pth holds no "
                              f"configuration: convert its .nequip.zip package or checkpoint)")
    pickles = [n for n in names if n.endswith("/data.pkl")]
    if len(pickles) == 1:
        from .sevenn.reader import is_sevenn_checkpoint
        with zipfile.ZipFile(path) as z:
            if is_sevenn_checkpoint(z.read(pickles[0])):
                return "sevenn"
    if any(n.endswith(".data/version") for n in names) or pickles:
        return "current"
    raise ConversionError(f"{path}: a zip archive that is neither a TorchScript nor a torch "
                          f"archive: not a NequIP model file")


def convert(path, out, species=None):
    """Convert `path` (or a SevenNet keyword) into the .fnqm file `out`; returns the kind
    that was read."""
    from .sevenn.reader import keyword_path
    path = keyword_path(path) or path
    kind = detect(path)
    try:
        if kind == "sevenn":
            if species is not None:
                raise ConversionError("--species: a SevenNet checkpoint names its elements")
            from .sevenn.fnqm import convert_sevenn
            model = convert_sevenn(path)
        elif kind == "classic":
            from .nequip.classic import convert_classic
            model = convert_classic(path, species)
        else:
            from .nequip.current import convert_current
            model = convert_current(path, species)
    except ConversionError as err:
        if str(err).startswith(str(path)):
            raise
        raise ConversionError(f"{path}: {err}") from err
    except Exception as err:  # noqa: BLE001 - a file that loads but is not what it claims
        raise ConversionError(f"{path}: unexpected contents for a {kind} model "
                              f"({type(err).__name__}: {err})") from err
    model.write(out)
    return kind


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="fusednequip-convert",
        description="Convert a NequIP model (0.5/0.6 deployed .pth; >= 0.7 .nequip.zip or "
                    ".ckpt), an Allegro model or a SevenNet checkpoint (or keyword: 7net-0, "
                    "7net-0_22May2024, 7net-l3i5, 7net-mf-0) into a fusednequip .fnqm model "
                    "file.",
        epilog="Converting loads the file with torch (and nequip's loader), which runs the "
               "Python code a package or checkpoint carries, as training or deploying it did: "
               "convert only files you trust. The .fnqm file it writes holds numbers only.")
    ap.add_argument("input", help="model file, or a SevenNet keyword")
    ap.add_argument("output", nargs="?", help="output .fnqm file (default: input name with "
                                              ".fnqm)")
    ap.add_argument("--species", help="element symbols of the model's types, in type order, "
                                      "comma-separated (when type names are not elements)")
    args = ap.parse_args(argv)
    out = args.output
    if out is None and not os.path.exists(args.input) and "/" not in args.input:
        out = args.input + ".fnqm"  # a keyword: 7net-0 -> ./7net-0.fnqm
    if out is None:
        base = os.path.basename(args.input)
        for ext in (".nequip.zip", ".nequip.pth", ".pth", ".ckpt", ".zip"):
            if base.endswith(ext):
                base = base[: -len(ext)]
                break
        out = os.path.join(os.path.dirname(args.input), base + ".fnqm")
    species = args.species.split(",") if args.species else None
    try:
        kind = convert(args.input, out, species)
    except ConversionError as err:
        print(f"fusednequip-convert: error: {err}", file=sys.stderr)
        return 2
    source = {"classic": "a nequip 0.5/0.6 deployed file", "current": "a nequip >= 0.7 file",
              "sevenn": "a SevenNet checkpoint"}[kind]
    print(f"fusednequip-convert: wrote {out} (from {source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
