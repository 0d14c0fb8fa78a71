// Cut decisions for Fused eager: size cap and loop-body recognition.
#include "graph/fusion.h"

#include <algorithm>

namespace torch_pjrt::graph {
namespace {
constexpr size_t kWindow = 16;    // ops that identify a position inside a repetition
constexpr size_t kMaxGrowth = 4;  // the history looked at grows up to this many caps
// Below the cap, the history is also searched for a period when its length is a power of two
// from this one up: a training step shorter than the cap, synced (`.item()`) every few steps,
// would otherwise never reach the cap, and each sync interval would become a new program.
constexpr size_t kFirstLook = 256;

bool power_of_two(size_t n) { return (n & (n - 1)) == 0; }
}  // namespace

bool FusionPolicy::after_op(uint64_t signature) {
  if (max_ops_ == 0) return false;  // no automatic cuts
  history_.push_back(signature);
  const size_t n = history_.size();
  if (segment_ != 0) {
    if (n < next_cut_) return false;
    if (hash(n - window_, n) == anchor_) {
      next_cut_ = segment_;
      return true;
    }
    segment_ = 0;  // the repetition broke off: learn again
  }
  const bool early = n >= kFirstLook && n < limit_ && power_of_two(n);
  if (n < limit_ && !early) return false;
  if (const size_t period = find_period()) {
    // Whole repetitions per program; very short ones grouped up to a 64th of the cap. Grouping
    // longer bodies (a training step) saves little at run time but multiplies compile time.
    // (Never more than half the history, so the first cut's anchor lies inside it.)
    segment_ = period * std::max<size_t>(1, std::min(max_ops_ / 64, n / 2) / period);
    window_ = std::min(kWindow, segment_);
    limit_ = max_ops_;
    // Cuts fall whole segments after the last cut or sync point (a sync usually ends a step), not
    // wherever the period happened to be found, so later syncs keep the cuts where they are.
    const size_t phase = n - n % segment_;
    anchor_ = hash(phase - window_, phase);
    next_cut_ = n == phase ? segment_ : phase + segment_;
    return n == phase;
  }
  if (early) return false;
  // A loop body may be longer than half the cap: look at a longer history next time.
  limit_ = std::min(2 * limit_, kMaxGrowth * max_ops_);
  return true;
}

void FusionPolicy::segment_done() {
  history_.clear();
  next_cut_ = segment_;
}

void FusionPolicy::set_max_ops(size_t max_ops) {
  max_ops_ = limit_ = max_ops;
  segment_ = 0;
  history_.clear();
}

uint64_t FusionPolicy::hash(size_t begin, size_t end) const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = begin; i < end; ++i) h = (h ^ history_[i]) * 0x100000001b3ull;
  return h;
}

size_t FusionPolicy::find_period() const {
  const size_t n = history_.size();
  const size_t window = n - n / 4;
  for (size_t p = 1; p <= window / 2; ++p) {
    bool periodic = true;
    for (size_t i = n - window; i + p < n && periodic; ++i)
      periodic = history_[i] == history_[i + p];
    if (periodic) return p;
  }
  return 0;
}

}  // namespace torch_pjrt::graph
