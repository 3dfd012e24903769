// An attention_decode(_paged) config from its seven parameters, in the family's order: what the
// attention tests (compile-time and GPU) build their decode configs with.
#pragma once

#include "ktune/config.h"

namespace ktune::testing {

inline Config decode_config(int chunk, int rows, int warps, int bn, int stages, int cluster = 0, int ilv = 0) {
  Config c;
  c.set("CHUNK", chunk);
  c.set("ROWS", rows);
  c.set("WARPS", warps);
  c.set("BN", bn);
  c.set("STAGES", stages);
  c.set("CLUSTER", cluster);
  c.set("ILV", ilv);
  return c;
}

} // namespace ktune::testing
