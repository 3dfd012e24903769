#!/usr/bin/env python3
"""Writes kernel_templates/gemm/gemm_wgmma_ops.cuh: the wgmma.mma_async wrappers of gemm_wgmma.cu.

One inline-asm statement per (N, dtype) names every accumulator register as its own operand
(N / 2 of them), which is too long to write by hand and too regular to get wrong by machine.
Run from the repository root: python3 tools/gen_wgmma_ops.py
"""
import pathlib

# Every multiple of 16 from 64 to 256: a tile's N (its columns) need not be a power of two where the
# B operand is K-major, and the sizes between decide how full the last wave of tiles is. cuBLAS's own
# Hopper kernels use such tiles (192 x 96 at 3072x768x3072, 256 x 144 at 1576x3072x768;
# docs/runs/2026-11-25-h100-s17-ncu-cublas-kernels-*).
NS = list(range(64, 257, 16))
NS_TF32 = [64, 128, 256]
DTYPES = [(0, "bf16"), (1, "f16")]


def wrapper(n, f16, t):
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    a, b, sc, ta, tb = regs, regs + 1, regs + 2, regs + 3, regs + 4
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return (
        f"template <int TA, int TB>\n"
        f"__device__ __forceinline__ void wgmma_m64n{n}k16(float (&d)[{regs}], unsigned long long da, unsigned long long db,\n"
        f"                                                 IsF16<{f16}>) {{\n"
        f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{sc}, 0;\\n"\n'
        f'               "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{dlist}}}, %{a}, %{b}, p, 1, 1, %{ta}, %{tb};\\n}}\\n"\n'
        f"               : {outs}\n"
        f'               : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB));\n'
        f"}}\n"
    )


def wrapper_rs(n, f16, t):
    # A from registers (gemm_wgmma's AR = 1): the warpgroup's 64 x 16 slice of A as four 32-bit
    # registers a thread, mma.sync m16n8k16's A fragment per warp (ldmatrix.x4 writes it). Only B
    # comes through a descriptor; the register form has no transpose immediate for A.
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    a0, b, sc, tb = regs, regs + 4, regs + 5, regs + 6
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return (
        f"template <int TB>\n"
        f"__device__ __forceinline__ void wgmma_m64n{n}k16_rs(float (&d)[{regs}], const unsigned (&a)[4], unsigned long long db,\n"
        f"                                                    IsF16<{f16}>) {{\n"
        f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{sc}, 0;\\n"\n'
        f'               "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{dlist}}}, {{%{a0}, %{a0 + 1}, %{a0 + 2}, %{a0 + 3}}}, %{b}, p, 1, 1, %{tb};\\n}}\\n"\n'
        f"               : {outs}\n"
        f'               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1), "n"(TB));\n'
        f"}}\n"
    )


def dispatcher_rs():
    lines = ["// wgmma_m64k16_rs<N, TB>(d, a, db, IsF16<F16>{}): the register-A wrapper above for the tile width N.",
             "template <int N, int TB, int F16>",
             "__device__ __forceinline__ void wgmma_m64k16_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long db, IsF16<F16> t) {",
             f'  static_assert(N % 16 == 0 && N >= {NS[0]} && N <= {NS[-1]}, "a wgmma N this header has a wrapper for");']
    for i, n in enumerate(NS):
        kw = "if constexpr" if i == 0 else "else if constexpr"
        lines.append(f"  {kw} (N == {n}) wgmma_m64n{n}k16_rs<TB>(d, a, db, t);")
    lines.append("}\n")
    return "\n".join(lines)


def dispatcher():
    # wgmma_m64k16<N, TA, TB>: the wrapper of tile width N, chosen at compile time.
    lines = ["// wgmma_m64k16<N, TA, TB>(d, da, db, IsF16<F16>{}): the m64nNk16 wrapper above for the tile width N.",
             "template <int N, int TA, int TB, int F16>",
             "__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], unsigned long long da, unsigned long long db, IsF16<F16> t) {",
             f'  static_assert(N % 16 == 0 && N >= {NS[0]} && N <= {NS[-1]}, "a wgmma N this header has a wrapper for");']
    for i, n in enumerate(NS):
        kw = "if constexpr" if i == 0 else "else if constexpr"
        lines.append(f"  {kw} (N == {n}) wgmma_m64n{n}k16<TA, TB>(d, da, db, t);")
    lines.append("}\n")
    return "\n".join(lines)


def wrapper_tf32(n):
    # TF32 has no transpose immediates: both operands K-major in shared memory (PTX ISA, wgmma).
    # scale_d = 0 starts a fresh sum (D = A * B): gemm_wgmma_tf32x3 adds short tensor-core sums
    # to its FP32 accumulators itself.
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    a, b, sc = regs, regs + 1, regs + 2
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return (
        f"__device__ __forceinline__ void wgmma_m64n{n}k8_tf32(float (&d)[{regs}], unsigned long long da, unsigned long long db,\n"
        f"                                                     int scale_d) {{\n"
        f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{sc}, 0;\\n"\n'
        f'               "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{dlist}}}, %{a}, %{b}, p, 1, 1;\\n}}\\n"\n'
        f"               : {outs}\n"
        f'               : "l"(da), "l"(db), "r"(scale_d));\n'
        f"}}\n"
    )


def main():
    out = [
        "// GENERATED by tools/gen_wgmma_ops.py -- do not edit by hand.",
        "// wgmma.mma_async m64nNk16 with FP32 accumulators (D += A * B, scale-d = 1), A and B from shared",
        "// memory through descriptors; TA / TB = 1: A (B) is MN-major (transposed), else K-major. Overloaded",
        "// on IsF16<0> (bf16) and IsF16<1> (f16). wgmma_m64nNk8_tf32: the TF32 form (both operands K-major,",
        "// no transpose; scale_d = 0: D = A * B), for gemm_wgmma_tf32x3. ..._rs: A from four registers a",
        "// thread instead of shared memory (gemm_wgmma's AR = 1), B through its descriptor. Needs sm_90a.",
        "#pragma once",
        "",
        "namespace ktune_dev {",
        "namespace wgmma {",
        "",
        "template <int F16>",
        "struct IsF16 {};",
        "",
    ]
    for n in NS:
        for f16, t in DTYPES:
            out.append(wrapper(n, f16, t))
    out.append(dispatcher())
    for n in NS:
        for f16, t in DTYPES:
            out.append(wrapper_rs(n, f16, t))
    out.append(dispatcher_rs())
    for n in NS_TF32:
        out.append(wrapper_tf32(n))
    out += ["} // namespace wgmma", "} // namespace ktune_dev", ""]
    path = pathlib.Path("kernel_templates/gemm/gemm_wgmma_ops.cuh")
    path.write_text("\n".join(out))


if __name__ == "__main__":
    main()
