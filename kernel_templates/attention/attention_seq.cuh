// Where a block's sequence lies, for the prefill kernels' two entry points: the op attention
// (every sequence SQ queries and SKV keys, batch b at b times the batch strides) and the op
// attention_varlen (packed sequences as flash_attn_varlen_func takes them: q, k and v (tokens,
// heads, head_dim), sequence b the tokens [cu_q[b], cu_q[b + 1]) of q and [cu_k[b], cu_k[b + 1])
// of k and v, at most SQ and SKV of them; the log-sum-exp (heads, total_q)). The kernels index rows
// within a sequence and add its first token's offset: the varlen entry passes zero batch strides.
#pragma once

namespace ktune_attn {

struct Seq {
  long long sq, skv;           // the sequence's query and key rows
  long long q_first, k_first;  // its first query and key token (0 without varlen)
  long long lse0;              // lse of its (head h, row 0); rows are consecutive
};

// cu_q and cu_k null: the op attention. TQ: the packed tokens of q (varlen's lse is (H, TQ)).
template <int VARLEN>
__device__ __forceinline__ Seq seq_of(long long b, long long h, long long H, long long SQ, long long SKV, long long TQ,
                                      const int* cu_q, const int* cu_k) {
  Seq s;
  if constexpr (VARLEN) {
    s.q_first = cu_q[b], s.k_first = cu_k[b];
    s.sq = cu_q[b + 1] - s.q_first, s.skv = cu_k[b + 1] - s.k_first;
    s.lse0 = h * TQ + s.q_first;
  } else {
    s.q_first = s.k_first = 0;
    s.sq = SQ, s.skv = SKV;
    s.lse0 = (b * H + h) * SQ;
  }
  return s;
}

} // namespace ktune_attn
