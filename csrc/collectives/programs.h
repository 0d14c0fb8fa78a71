// The StableHLO programs of the device transport's collectives: one small program per (operation,
// element type, element count, group size, reduction, root), run by every rank of a group as one
// replica of an executable compiled with the group's device assignment (replica i = group rank i).
// Every program works on flat (rank-1) arrays; callers flatten and reshape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/types.h"

namespace torch_pjrt::collectives {

using hlo::ElementType;

enum class Kind {
  kAllReduce,      // x[n] -> reduce over ranks [n]
  kBroadcast,      // (x[n], rank) -> root's x, bit-exact [n]
  kReduce,         // (x[n], rank) -> the reduction on root, x unchanged elsewhere [n]
  kAllGather,      // x[n] -> every rank's x, in rank order [size * n]
  kReduceScatter,  // x[size * n] -> chunk `rank` of the reduction [n]
  kScatter,        // (x[size * n], rank) -> chunk `rank` of root's x, bit-exact [n]
  kAllToAll,       // x[size * n] -> chunk j of rank j's x, at position j [size * n]
  kPermute,        // one collective_permute per transfer (send/recv)
};

// c10d's reductions. Bool follows NCCL: SUM and MAX are OR, PRODUCT and MIN are AND.
// kAvg divides the sum by the group size (truncating for integers); kPremulSum multiplies each
// rank's x by a scalar argument first (floating types only).
enum class Reduce { kSum, kProduct, kMin, kMax, kAvg, kBand, kBor, kBxor, kPremulSum };

// One point-to-point transfer of a kPermute program: `count` elements of `type`, from replica
// `src` to replica `dst`. The program takes one operand per transfer (the sender's data; the
// receiver passes any array of that type and count) and returns one result per transfer (the data
// on the receiver, zeros elsewhere).
struct Transfer {
  ElementType type;
  int64_t count;
  int src;
  int dst;
};

struct Spec {
  Kind kind = Kind::kAllReduce;
  ElementType type = ElementType::F32;
  int64_t count = 0;  // elements per rank as described by each kind (n)
  int group_size = 1;
  Reduce reduce = Reduce::kSum;
  int root = 0;
  std::vector<Transfer> transfers;  // kPermute only
};

// Throws std::invalid_argument naming the collective when the spec is not valid (a reduction
// undefined for the type, a root outside the group, ...), before anything is built.
void validate(const Spec& spec);
// The program's MLIR text. Arguments: x (every kind but kPermute), then the rank as tensor<i32>
// (kBroadcast, kReduce, kScatter) and the factor as a rank-0 tensor of `type` (kPremulSum); for
// kPermute, one operand per transfer.
std::string program(const Spec& spec);
// A string identifying the program, for caches.
std::string key(const Spec& spec);
// "all_reduce", "broadcast", ... for messages.
const char* kind_name(Kind kind);
const char* reduce_name(Reduce reduce);

}  // namespace torch_pjrt::collectives
