// The two recursions of CTC loss as while loops over time, in log space, vectorized over the batch
// and the extended target (blanks between labels, S' positions). Float32/64.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (lp [T, B, S'], skip [B, S'] bool, start [B, S'] bool) -> log_alpha [T, B, S']: alpha_0 is lp_0
// where `start`, else -inf; alpha_t(s) = lp_t(s) + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s - 1),
// and alpha_{t-1}(s - 2) where skip(s)).
extern const graph::OpDef kCtcAlpha;
// (lp [T, B, S'], skip_ahead [B, S'] bool, start [B, S'] bool, lengths [B] int64) -> log_beta
// [T, B, S']: -inf from each entry's length on; at its last step lp where `start`, else -inf;
// before it beta_t(s) = lp_t(s) + logsumexp(beta_{t+1}(s), beta_{t+1}(s + 1), and
// beta_{t+1}(s + 2) where skip_ahead(s)).
extern const graph::OpDef kCtcBeta;

}  // namespace torch_pjrt::lowering
