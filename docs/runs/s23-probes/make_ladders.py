#!/usr/bin/env python3
"""Session 23 probe: gemm_wgmma with A from registers (AR 1) against A from shared memory (AR 0),
config by config, at the public suite's wgmma rows. Writes one ladder a shape into the folder
given (default: this script's folder). Run: python3 make_ladders.py [DIR]"""
import json, pathlib, sys

BASE = {"BM": 128, "BN": 256, "WG": 2, "ST": 4, "SWZ": 16, "TMA": 1, "PACK": 0, "SPLITK": 1, "CL": 1, "PT": 0,
        "MC": 0, "EPI": 2, "PP": 0, "SK": 0, "SWAP": 0, "AR": 0}


def cfg(**kw):
    c = dict(BASE)
    c.update(kw)
    return c


# (shape, dtype, [(name, config)]): the shipped entry of configs/tables/sm_90-half-wgmma.json first,
# then the forms sessions 20-21 measured best on the aligned rows, and cuBLAS's own tiling (swapped
# 256 x 128: the MN-major operand as wgmma's A, two m64 blocks a consumer).
SHAPES = [
    ((2048, 2048, 2048), "bf16", [
        ("shipped_128x256_st3_epi1_pt1_swz8", cfg(ST=3, SWZ=8, PT=1, EPI=1)),
        ("128x256_st4_epi2_pt0_swz16", cfg()),
        ("128x256_st4_epi2_pt1_swz16", cfg(PT=1)),
        ("256x128_st4_epi2_pt1_swz8", cfg(BM=256, BN=128, PT=1, SWZ=8)),
        ("swap_256x128_st3_epi1_pt1", cfg(BM=256, BN=128, ST=3, PT=1, EPI=1, SWAP=1, SWZ=8)),
    ]),
    ((4096, 4096, 4096), "bf16", [
        ("shipped_128x256_st4_epi2_pt4_swz16", cfg(PT=4)),
        ("128x256_st4_epi2_pt0_swz16", cfg()),
        ("256x128_st4_epi2_pt1_swz8", cfg(BM=256, BN=128, PT=1, SWZ=8)),
    ]),
    ((2048, 4096, 4096), "bf16", [
        ("shipped_128x256_st4_epi2_pt2_swz16", cfg(PT=2)),
        ("128x256_st4_epi2_pt0_swz16", cfg()),
    ]),
    ((2048, 4096, 11008), "bf16", [
        ("shipped_128x256_st4_epi2_pt2_swz16", cfg(PT=2)),
        ("128x256_st4_epi2_pt0_swz16", cfg()),
    ]),
    ((2048, 11008, 4096), "bf16", [
        ("shipped_128x256_st3_epi1_pt0_sk2", cfg(ST=3, EPI=1, SK=2)),
        ("128x256_st4_epi2_pt0_swz16", cfg()),
    ]),
    ((1024, 1024, 1024), "bf16", [
        ("shipped_64x128_wg1_st6_epi1_pt1", cfg(BM=64, BN=128, WG=1, ST=6, SWZ=8, PT=1, EPI=1)),
        ("128x128_st5_epi1_pt0", cfg(BN=128, ST=5, EPI=1)),
    ]),
    ((128, 4096, 4096), "bf16", [
        ("shipped_64x64_wg1_st8_epi1", cfg(BM=64, BN=64, WG=1, ST=8, SWZ=8, PT=1, EPI=1)),
        ("128x128_st4_splitk8", cfg(BN=128, SWZ=8, PT=1, EPI=0, SPLITK=8)),
    ]),
    ((2999, 2999, 2999), "bf16", [
        ("shipped_128x128_st5_pt0_mc2_epi3_packed", cfg(BN=128, ST=5, PACK=1, MC=2, EPI=3)),
    ]),
    ((4096, 4096, 4096), "f16", [
        ("shipped_128x256_st3_epi1_pt4_swz16", cfg(ST=3, PT=4, EPI=1)),
        ("128x256_st4_epi2_pt0_swz16", cfg()),
    ]),
]


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent
    for (m, n, k), dt, rungs in SHAPES:
        lad = {"about": "session 23 probe: AR 1 (A from registers) beside AR 0, same config",
               "problem": {"m": m, "n": n, "k": k, "dtype": dt}, "rungs": []}
        for name, c in rungs:
            for ar in (0, 1):
                lad["rungs"].append({"name": f"{name}_ar{ar}", "family": "gemm_wgmma", "config": dict(c, AR=ar)})
        (out / f"ar-{m}x{n}x{k}-{dt}.json").write_text(json.dumps(lad, indent=1) + "\n")


if __name__ == "__main__":
    main()
