// attention_varlen's sequence lengths as the tuner fills them (kernel_templates/attention/
// attention.cpp; tuner/attention_op.cpp): the op's flops and bytes are those of the even split.
#pragma once
#include <cstdint>
#include <vector>

namespace ktune {

// The cumulative lengths (batch + 1 of them, from 0 to total) of `total` tokens in `batch`
// sequences of at most `longest` each (total <= batch x longest). seed 0: as evenly as they go,
// the first total % batch sequences one longer (what the tuner times). Otherwise ragged, from the
// seed: tokens moved at random between sequences, and with three sequences or more sequence
// `empty` (1 to batch - 1) emptied where the others can hold its tokens (what the tuner verifies
// as served: the queries empty sequence 1, the keys the last one, whose rows then see no key).
std::vector<int32_t> varlen_cu_seqlens(int64_t total, int64_t batch, int64_t longest, uint64_t seed,
                                       int64_t empty = 1);

} // namespace ktune
