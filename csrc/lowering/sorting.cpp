// Sort with an int64 index operand and a comparator that orders NaN as the largest value.
#include "lowering/sorting.h"

#include <string>

namespace torch_pjrt::lowering {
namespace {

const char* comparison_type(hlo::ElementType t) {
  if (runtime::is_floating(t)) return "FLOAT";
  return t == hlo::ElementType::Bool || runtime::is_unsigned(t) ? "UNSIGNED" : "SIGNED";
}

// The comparator `a before b` on keys of type `t` (indices ride along unused).
std::string comparator(hlo::Builder& b, hlo::ElementType t, bool descending) {
  const hlo::TensorType key{t, {}}, index{hlo::ElementType::I64, {}},
      pred{hlo::ElementType::Bool, {}};
  return b.region(
      {key, key, index, index}, [&](const std::vector<std::string>& a, const std::string& p) {
        const std::string k = key.str(), i1 = pred.str();
        auto compare = [&](const std::string& name, const char* dir, const std::string& l,
                           const std::string& r) {
          return "      " + p + name + " = \"stablehlo.compare\"(" + l + ", " + r +
                 ") {comparison_direction = #stablehlo<comparison_direction " + dir +
                 ">, compare_type = #stablehlo<comparison_type " + comparison_type(t) + ">} : (" +
                 k + ", " + k + ") -> " + i1 + "\n";
        };
        auto logic = [&](const std::string& name, const char* op, const std::string& operands,
                         const std::string& types) {
          return "      " + p + name + " = \"stablehlo." + op + "\"(" + operands + ") : (" + types +
                 ") -> " + i1 + "\n";
        };
        hlo::Builder::RegionBody body;
        body.returned_types = {pred};
        body.lines = compare("ord", descending ? "GT" : "LT", a[0], a[1]);
        if (!runtime::is_floating(t)) {
          body.returned = {p + "ord"};
          return body;
        }
        // Ascending: a number comes before NaN; descending: NaN comes before a number.
        const std::string& nan_side = descending ? a[0] : a[1];
        const std::string& num_side = descending ? a[1] : a[0];
        body.lines += compare("nan", "NE", nan_side, nan_side);
        body.lines += compare("num", "EQ", num_side, num_side);
        body.lines += logic("nan_first", "and", p + "nan, " + p + "num", i1 + ", " + i1);
        body.lines += logic("before", "or", p + "ord, " + p + "nan_first", i1 + ", " + i1);
        body.returned = {p + "before"};
        return body;
      });
}

std::vector<hlo::Value> emit_sort(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = in[0];
  const hlo::TensorType index_type{hlo::ElementType::I64, x.type.dims};
  if (x.type.rank() == 0) return {x, b.splat(0, index_type)};
  const int64_t dim = attrs.ints[0];
  hlo::Value iota = b.iota(index_type, dim);
  const std::string less = comparator(b, x.type.dtype, attrs.ints[1] != 0);
  std::vector<hlo::Value> sorted =
      b.op("sort", {x, iota}, {x.type, iota.type},
           "dimension = " + std::to_string(dim) + " : i64, is_stable = true", less);
  if (outs[0].dims != x.type.dims) {
    const std::vector<int64_t> start(x.type.rank(), 0), strides(x.type.rank(), 1);
    for (hlo::Value& v : sorted) v = b.slice(v, start, outs[0].dims, strides);
  }
  return sorted;
}

}  // namespace

const graph::OpDef kSort{"sort", emit_sort};

}  // namespace torch_pjrt::lowering
