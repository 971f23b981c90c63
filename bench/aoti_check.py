# Does any AOTInductor package load on this machine? A torch.nn.Linear exported, compiled and
# loaded back (bench/NOTES.md: nequip's compiled models die in torch's _load_aoti on the H100 image,
# in the wrapper's own std::regex; with LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6) they load).
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        return self.lin(x).sin()
m = M().cuda()
x = torch.randn(4, 8, device="cuda")
ep = torch.export.export(m, (x,))
path = torch._inductor.aoti_compile_and_package(ep, package_path="/tmp/aoti-check.pt2")
print("compiled", path, flush=True)
runner = torch._inductor.aoti_load_package(path)
print("loaded; max |diff|", (runner(x) - m(x)).abs().max().item(), flush=True)
