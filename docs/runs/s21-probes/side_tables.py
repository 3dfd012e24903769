#!/usr/bin/env python3
"""Session 21 probe: per-SM tile tables for KTUNE_EXP_SMTILE from l2_sides' output (argv[1]).
128 x 256 tiles of a 2048 x 2048 C (16 x 8 tiles, tile index tm * 8 + tn, SWZ 1's raster):
BSPLIT gives each L2 side four whole tile columns (B's panels read on one side), ASPLIT eight whole
tile rows (A's), CTRL SM s tile s (no regard for sides). Prints shell assignments."""
import re, sys
side = {}
for l in open(sys.argv[1]):
    m = re.match(r'^\s*(\d+)\s+[\d.]+\s+[-\d.]+\s+[-\d.]+\s+(\d)$', l)
    if m: side[int(m.group(1))] = int(m.group(2))
assert len(side) == 132, len(side)
s0 = sorted(s for s in side if side[s] == 0); s1 = sorted(s for s in side if side[s] == 1)
assert len(s0) >= 64 and len(s1) >= 64, (len(s0), len(s1))
def table(assign):
    t = [-1] * 132
    for sd, sms in ((0, s0), (1, s1)):
        for r, s in enumerate(sms[:64]): t[s] = assign(sd, r)
    assert sorted(x for x in t if x >= 0) == list(range(128))
    return ",".join(map(str, t))
print('BSPLIT="%s"' % table(lambda sd, r: (r % 16) * 8 + (4 * sd + r // 16)))
print('ASPLIT="%s"' % table(lambda sd, r: (8 * sd + r // 8) * 8 + r % 8))
print('CTRL="%s"' % ",".join(str(s if s < 128 else -1) for s in range(132)))
print('# sides: %d / %d SMs' % (len(s0), len(s1)))
