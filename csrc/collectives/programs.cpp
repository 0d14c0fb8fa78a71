// Collective programs: StableHLO all_reduce / all_gather / reduce_scatter / all_to_all /
// collective_permute over replica group [0, size), plus the selects that make broadcast, reduce and
// scatter from them. XLA:CPU has no collective_broadcast, and its all-reduce combines only with
// add, multiply, minimum and maximum: broadcast and scatter sum root's data with zeros as integer
// bits (a float sum would lose -0.0 and NaN payloads), and the bitwise reductions gather every
// rank's data and reduce it locally.
#include "collectives/programs.h"

#include <stdexcept>
#include <string>

#include "hlo/builder.h"

namespace torch_pjrt::collectives {
namespace {

using hlo::Builder;
using hlo::TensorType;
using hlo::Value;

[[noreturn]] void fail(const Spec& spec, const std::string& problem) {
  throw std::invalid_argument(std::string(kind_name(spec.kind)) + ": " + problem);
}

bool is_bool(ElementType t) { return t == ElementType::Bool; }

// `replica_groups = dense<[[0, 1, ...]]> : tensor<1xNxi64>`.
std::string replica_groups(int size) {
  std::string ids;
  for (int i = 0; i < size; ++i) ids += (i ? ", " : "") + std::to_string(i);
  return "replica_groups = dense<[[" + ids + "]]> : tensor<1x" + std::to_string(size) + "xi64>";
}

// The same-width integer type data moves as when it must arrive bit-exact.
ElementType bits_type(ElementType t) {
  switch (t) {
    case ElementType::F16:
    case ElementType::BF16:
      return ElementType::I16;
    case ElementType::F32:
      return ElementType::I32;
    case ElementType::F64:
      return ElementType::I64;
    case ElementType::Bool:
      return ElementType::I8;
    default:
      return t;
  }
}

Value to_bits(Builder& b, Value x) {
  if (is_bool(x.type.dtype)) return b.convert(x, ElementType::I8);
  const ElementType bits = bits_type(x.type.dtype);
  return bits == x.type.dtype ? x : b.bitcast_convert(x, bits);
}

Value from_bits(Builder& b, Value bits, ElementType to) {
  if (is_bool(to)) return b.compare(hlo::Cmp::NE, bits, b.splat(0, bits.type));
  return bits.type.dtype == to ? bits : b.bitcast_convert(bits, to);
}

bool is_bitwise(Reduce reduce) {
  return reduce == Reduce::kBand || reduce == Reduce::kBor || reduce == Reduce::kBxor;
}

// The StableHLO combiner of `reduce` on (bool as 0/1 i8) values: OR is maximum, AND minimum.
const char* combiner_op(Reduce reduce, bool boolean) {
  switch (reduce) {
    case Reduce::kSum:
    case Reduce::kAvg:
    case Reduce::kPremulSum:
      return boolean ? "maximum" : "add";
    case Reduce::kProduct:
      return boolean ? "minimum" : "multiply";
    case Reduce::kMin:
      return "minimum";
    case Reduce::kMax:
      return "maximum";
    case Reduce::kBand:
      return boolean ? "minimum" : "and";
    case Reduce::kBor:
      return boolean ? "maximum" : "or";
    case Reduce::kBxor:
      return "xor";
  }
  return "add";
}

// all_reduce (or reduce_scatter when `scatter`) of `x` with `combine` over the whole group.
Value collective_reduce(Builder& b, Value x, const char* combine, int size, bool scatter) {
  TensorType out = x.type;
  std::string attrs = replica_groups(size);
  const char* name = "all_reduce";
  if (scatter) {
    out.dims[0] /= size;
    attrs = "scatter_dimension = 0 : i64, " + attrs;
    name = "reduce_scatter";
  }
  const std::string region = b.combiner(x.type.dtype, combine);
  return b.op(name, {x}, {out}, attrs, region)[0];
}

// Bitwise reduction of integers (and XOR of bools as 0/1 bytes), which all-reduce cannot combine:
// every rank's data (all_gather; all_to_all of the chunks for `scatter`) reduced locally.
Value bitwise_reduction(Builder& b, const char* combine, Value v, int size, bool scatter) {
  const int64_t n = scatter ? v.type.dims[0] / size : v.type.dims[0];
  const std::string groups = replica_groups(size);
  const TensorType all{v.type.dtype, {n * size}};
  Value every = scatter ? b.op("all_to_all", {v}, {all},
                               "split_dimension = 0 : i64, concat_dimension = 0 : i64, "
                               "split_count = " +
                                   std::to_string(size) + " : i64, " + groups)[0]
                        : b.op("all_gather", {v}, {all}, "all_gather_dim = 0 : i64, " + groups)[0];
  every = b.reshape(every, {size, n});
  const Value init = b.constant_int(std::string(combine) == "and" ? -1 : 0, v.type.dtype);
  const std::string region = b.combiner(v.type.dtype, combine);
  return b.op("reduce", {every, init}, {TensorType{v.type.dtype, {n}}},
              "dimensions = array<i64: 0>", region)[0];
}

// The reduction `spec.reduce` of x over the group (scattered by chunks when `scatter`), with
// premultiplication, averaging and bool handled around the collective.
Value reduction(Builder& b, const Spec& spec, Value x, const Value* factor, bool scatter) {
  const bool boolean = is_bool(spec.type);
  if (spec.reduce == Reduce::kPremulSum) {
    x = b.binary("multiply", x, b.broadcast_in_dim(*factor, x.type.dims, {}));
  }
  Value v = boolean ? b.convert(x, ElementType::I8) : x;
  const char* combine = combiner_op(spec.reduce, boolean);
  if (std::string(combine) == "and" || std::string(combine) == "or" ||
      std::string(combine) == "xor") {
    v = bitwise_reduction(b, combine, v, spec.group_size, scatter);
  } else {
    v = collective_reduce(b, v, combine, spec.group_size, scatter);
  }
  if (boolean) return b.compare(hlo::Cmp::NE, v, b.splat(0, v.type));
  if (spec.reduce == Reduce::kAvg) v = b.binary("divide", v, b.splat(spec.group_size, v.type));
  return v;
}

// Bool [n] that is true on the root replica.
Value on_root(Builder& b, Value rank, int root, const std::vector<int64_t>& dims) {
  Value is_root = b.compare(hlo::Cmp::EQ, rank, b.constant_int(root, ElementType::I32));
  return b.broadcast_in_dim(is_root, dims, {});
}

// Root's x, moved as integer bits: zeros elsewhere, summed (scattered by chunks when `scatter`).
Value from_root(Builder& b, const Spec& spec, Value x, Value rank, bool scatter) {
  Value bits = to_bits(b, x);
  bits = b.select(on_root(b, rank, spec.root, bits.type.dims), bits, b.splat(0, bits.type));
  bits = collective_reduce(b, bits, "add", spec.group_size, scatter);
  return from_bits(b, bits, spec.type);
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce:
      return "all_reduce";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kReduce:
      return "reduce";
    case Kind::kAllGather:
      return "all_gather";
    case Kind::kReduceScatter:
      return "reduce_scatter";
    case Kind::kScatter:
      return "scatter";
    case Kind::kAllToAll:
      return "all_to_all";
    case Kind::kPermute:
      return "send/recv";
  }
  return "collective";
}

const char* reduce_name(Reduce reduce) {
  switch (reduce) {
    case Reduce::kSum:
      return "SUM";
    case Reduce::kProduct:
      return "PRODUCT";
    case Reduce::kMin:
      return "MIN";
    case Reduce::kMax:
      return "MAX";
    case Reduce::kAvg:
      return "AVG";
    case Reduce::kBand:
      return "BAND";
    case Reduce::kBor:
      return "BOR";
    case Reduce::kBxor:
      return "BXOR";
    case Reduce::kPremulSum:
      return "PREMUL_SUM";
  }
  return "?";
}

void validate(const Spec& spec) {
  if (spec.group_size < 1) fail(spec, "group size must be positive");
  if (spec.count < 0) fail(spec, "negative element count");
  if (spec.root < 0 || spec.root >= spec.group_size) {
    fail(spec, "root " + std::to_string(spec.root) + " is outside the group of " +
                   std::to_string(spec.group_size));
  }
  const bool reduces = spec.kind == Kind::kAllReduce || spec.kind == Kind::kReduce ||
                       spec.kind == Kind::kReduceScatter;
  if (reduces) {
    const std::string op = reduce_name(spec.reduce);
    const std::string type = runtime::element_name(spec.type);
    if (is_bitwise(spec.reduce) && runtime::is_floating(spec.type)) {
      fail(spec, "ReduceOp." + op + " is not defined for " + type + " tensors");
    }
    if (spec.reduce == Reduce::kPremulSum && !runtime::is_floating(spec.type)) {
      fail(spec, "ReduceOp.PREMUL_SUM needs a floating-point tensor, got " + type);
    }
    if (spec.reduce == Reduce::kAvg && is_bool(spec.type)) {
      fail(spec, "cannot use ReduceOp.AVG with boolean inputs");
    }
  }
  if (spec.kind == Kind::kPermute) {
    if (spec.transfers.empty()) fail(spec, "no transfers");
    for (const Transfer& t : spec.transfers) {
      if (t.src < 0 || t.src >= spec.group_size || t.dst < 0 || t.dst >= spec.group_size ||
          t.src == t.dst) {
        fail(spec, "transfer " + std::to_string(t.src) + " -> " + std::to_string(t.dst) +
                       " is not between two ranks of the group of " +
                       std::to_string(spec.group_size));
      }
      if (t.count < 0) fail(spec, "negative element count");
    }
  }
}

std::string program(const Spec& spec) {
  validate(spec);
  Builder b;
  const int size = spec.group_size;
  if (spec.kind == Kind::kPermute) {
    std::vector<Value> results;
    for (const Transfer& t : spec.transfers) {
      Value x = b.parameter(TensorType{t.type, {t.count}});
      const std::string pairs = "source_target_pairs = dense<[[" + std::to_string(t.src) + ", " +
                                std::to_string(t.dst) + "]]> : tensor<1x2xi64>";
      // No channel_handle: with one it is a cross-partition permute, which moves nothing here.
      results.push_back(b.op("collective_permute", {x}, {x.type}, pairs)[0]);
    }
    return b.emit(results);
  }

  const bool chunked = spec.kind == Kind::kReduceScatter || spec.kind == Kind::kScatter ||
                       spec.kind == Kind::kAllToAll;
  Value x = b.parameter(TensorType{spec.type, {chunked ? spec.count * size : spec.count}});
  const bool ranked =
      spec.kind == Kind::kBroadcast || spec.kind == Kind::kReduce || spec.kind == Kind::kScatter;
  Value rank = ranked ? b.parameter(TensorType{ElementType::I32, {}}) : Value{};
  Value factor =
      spec.reduce == Reduce::kPremulSum ? b.parameter(TensorType{spec.type, {}}) : Value{};
  Value out = x;
  switch (spec.kind) {
    case Kind::kAllReduce:
      out = reduction(b, spec, x, &factor, false);
      break;
    case Kind::kReduceScatter:
      out = reduction(b, spec, x, &factor, true);
      break;
    case Kind::kReduce:
      out = b.select(on_root(b, rank, spec.root, x.type.dims),
                     reduction(b, spec, x, &factor, false), x);
      break;
    case Kind::kBroadcast:
      out = from_root(b, spec, x, rank, false);
      break;
    case Kind::kScatter:
      out = from_root(b, spec, x, rank, true);
      break;
    case Kind::kAllGather: {
      Value v = is_bool(spec.type) ? b.convert(x, ElementType::I8) : x;
      v = b.op("all_gather", {v}, {TensorType{v.type.dtype, {spec.count * size}}},
               "all_gather_dim = 0 : i64, " + replica_groups(size))[0];
      out = from_bits(b, v, spec.type);
      break;
    }
    case Kind::kAllToAll: {
      Value v = is_bool(spec.type) ? b.convert(x, ElementType::I8) : x;
      v = b.op("all_to_all", {v}, {v.type},
               "split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = " +
                   std::to_string(size) + " : i64, " + replica_groups(size))[0];
      out = from_bits(b, v, spec.type);
      break;
    }
    case Kind::kPermute:
      break;
  }
  return b.emit({out});
}

std::string key(const Spec& spec) {
  std::string k = std::string(kind_name(spec.kind)) + "/" + runtime::element_name(spec.type) + "/" +
                  std::to_string(spec.count) + "/" + std::to_string(spec.group_size) + "/" +
                  reduce_name(spec.reduce) + "/" + std::to_string(spec.root);
  for (const Transfer& t : spec.transfers) {
    k += "/" + std::string(runtime::element_name(t.type)) + ":" + std::to_string(t.count) + ":" +
         std::to_string(t.src) + ">" + std::to_string(t.dst);
  }
  return k;
}

}  // namespace torch_pjrt::collectives
