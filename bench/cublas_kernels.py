# Which cuBLAS kernels torch.matmul (cublasGemmEx, as ktune bench calls it) runs at the models and public
# bf16 shapes: run under `ncu --csv --nvtx --print-nvtx-rename kernel -k regex:nvjet --section LaunchStats`.
# The GPU machine has PyTorch; ktune itself never needs it.
import torch
shapes = [(2048,6144,4096),(1024,14336,4096),(1024,4096,14336),(512,4608,3584),(777,3584,18944),(1000,9216,3072),
          (2048,2560,2048),(512,16384,2048),(3072,3072,768),(3072,768,3072),(1024,3072,768),(1576,3072,768),(1000,4672,4544),
          (64,3072,8192),(256,50257,768),
          (1024,1024,1024),(2048,2048,2048),(4096,4096,4096),(8192,8192,8192),(2048,4096,4096),(2048,11008,4096),(2048,4096,11008),
          (128,4096,4096),(512,512,32768),(1,4096,4096),(16,4096,4096)]
for dt in (torch.bfloat16,):
  for (m,n,k) in shapes:
    a = torch.randn(m,k,device='cuda',dtype=dt); b = torch.randn(k,n,device='cuda',dtype=dt)
    torch.cuda.nvtx.range_push(f"{m}x{n}x{k}")
    for _ in range(2): c = a @ b
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    print(m,n,k, flush=True)
