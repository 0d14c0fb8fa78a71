// When Fused eager cuts the pending graph into programs. Sync points cut by themselves; on top of
// them the policy cuts at a size cap and, once it recognizes a repeating op sequence (a loop body),
// at the same point of every repetition, so a loop's steady state runs one cached program per
// repetition instead of programs cut at arbitrary, ever-shifting places. Cuts fall whole
// repetitions after the last sync point. Repetitions are looked for
// at the cap and, before it, at power-of-two history lengths (loops synced before the cap is
// reached). A history without a period doubles the next cap (up to 4x), so bodies longer than half
// the cap are found too. A cap of 0 turns the policy off: programs end at sync points and explicit
// launches only (the vLLM worker, which launches each part of a step itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace torch_pjrt::graph {

class FusionPolicy {
 public:
  explicit FusionPolicy(size_t max_ops) : max_ops_(max_ops), limit_(max_ops) {}

  // One eager op finished after recording nodes with `signature` (its op identities, attributes
  // and types). True when the pending work should be materialized now.
  bool after_op(uint64_t signature);
  // Pending work was materialized, for this policy or any other reason: a new segment starts.
  void segment_done();

  void set_max_ops(size_t max_ops);
  size_t max_ops() const { return max_ops_; }
  // Ops per program once a repetition is recognized; 0 while none is.
  size_t segment_ops() const { return segment_; }

 private:
  // FNV-1a of history_[begin, end).
  uint64_t hash(size_t begin, size_t end) const;
  // The smallest period of the whole history (at least two repetitions of it), or 0.
  size_t find_period() const;

  size_t max_ops_;
  size_t limit_;  // ops before the next cut: the cap, grown while no period is found
  std::vector<uint64_t> history_;  // signatures of the ops of the current segment
  size_t segment_ = 0;
  size_t next_cut_ = 0;  // history length at the next cut, while segment_ is set
  size_t window_ = 0;    // ops hashed into anchor_
  uint64_t anchor_ = 0;  // hash of the ops just before the cut the repetition returns to
};

}  // namespace torch_pjrt::graph
