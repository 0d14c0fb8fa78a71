// Builder: validates each op, computes its result type and appends it to @main in generic syntax.
#include "hlo/builder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace torch_pjrt::hlo {

namespace {

using runtime::element_name;

[[noreturn]] void fail(const std::string& op, const std::string& problem) {
  throw std::invalid_argument("hlo::" + op + ": " + problem);
}

// Element type classes, combined as masks of the types an op accepts.
enum : unsigned { kFloat = 1, kSigned = 2, kUnsigned = 4, kBool = 8, kComplex = 16 };
constexpr unsigned kInt = kSigned | kUnsigned;
constexpr unsigned kNumber = kFloat | kInt;

// The class of a valid element type (see check_element).
unsigned type_class(ElementType t) {
  switch (t) {
    case ElementType::Bool:
      return kBool;
    case ElementType::U8:
    case ElementType::U16:
    case ElementType::U32:
    case ElementType::U64:
      return kUnsigned;
    case ElementType::I8:
    case ElementType::I16:
    case ElementType::I32:
    case ElementType::I64:
      return kSigned;
    case ElementType::F16:
    case ElementType::BF16:
    case ElementType::F32:
    case ElementType::F64:
    case ElementType::F8E5M2:
    case ElementType::F8E4M3FN:
    case ElementType::F8E5M2FNUZ:
    case ElementType::F8E4M3FNUZ:
      return kFloat;
    case ElementType::C64:
    case ElementType::C128:
      return kComplex;
  }
  throw std::invalid_argument("hlo: invalid element type " + std::to_string(static_cast<int>(t)));
}

void check_element(const std::string& op, ElementType t) {
  switch (t) {
    case ElementType::Bool:
    case ElementType::I8:
    case ElementType::I16:
    case ElementType::I32:
    case ElementType::I64:
    case ElementType::U8:
    case ElementType::U16:
    case ElementType::U32:
    case ElementType::U64:
    case ElementType::F16:
    case ElementType::BF16:
    case ElementType::F32:
    case ElementType::F64:
    case ElementType::C64:
    case ElementType::C128:
    case ElementType::F8E5M2:
    case ElementType::F8E4M3FN:
    case ElementType::F8E5M2FNUZ:
    case ElementType::F8E4M3FNUZ:
      return;
  }
  fail(op, "invalid element type " + std::to_string(static_cast<int>(t)));
}

int bit_width(ElementType t) {
  return t == ElementType::Bool ? 1 : static_cast<int>(runtime::element_size(t) * 8);
}

struct OpInfo {
  const char* name;
  unsigned accepts;
  bool bool_result = false;
  bool real_result = false;  // a complex operand gives its parts' real type (abs, real, imag)
};

const OpInfo kBinaryOps[] = {
    {"add", kNumber | kBool | kComplex},
    {"subtract", kNumber | kComplex},
    {"multiply", kNumber | kBool | kComplex},
    {"divide", kNumber | kComplex},
    {"remainder", kNumber},
    {"power", kNumber | kComplex},
    {"maximum", kNumber | kBool},
    {"minimum", kNumber | kBool},
    {"and", kInt | kBool},
    {"or", kInt | kBool},
    {"xor", kInt | kBool},
    {"atan2", kFloat},
    {"shift_left", kInt},
    {"shift_right_arithmetic", kInt},
    {"shift_right_logical", kInt},
};

const OpInfo kUnaryOps[] = {
    {"negate", kNumber | kComplex},
    {"abs", kFloat | kSigned | kComplex, false, true},
    {"sign", kFloat | kSigned | kComplex},
    {"exponential", kFloat | kComplex},
    {"exponential_minus_one", kFloat | kComplex},
    {"log", kFloat | kComplex},
    {"log_plus_one", kFloat | kComplex},
    {"sqrt", kFloat | kComplex},
    {"rsqrt", kFloat | kComplex},
    {"cbrt", kFloat},
    {"tanh", kFloat | kComplex},
    {"tan", kFloat | kComplex},
    {"logistic", kFloat | kComplex},
    {"floor", kFloat},
    {"ceil", kFloat},
    {"sine", kFloat | kComplex},
    {"cosine", kFloat | kComplex},
    {"real", kComplex, false, true},
    {"imag", kComplex, false, true},
    {"round_nearest_afz", kFloat},
    {"round_nearest_even", kFloat},
    {"is_finite", kFloat, true},
    {"not", kInt | kBool},
    {"popcnt", kInt},
    {"count_leading_zeros", kInt},
};

template <size_t N>
const OpInfo* find_op(const OpInfo (&table)[N], const char* name) {
  for (const OpInfo& info : table) {
    if (std::strcmp(info.name, name) == 0) return &info;
  }
  return nullptr;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string list(const std::vector<int64_t>& v) { return "[" + join(v) + "]"; }

void check_dims(const std::string& op, const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < 0) fail(op, "negative dimension size in [" + join(dims) + "]");
  }
}

void check_type(const std::string& op, const TensorType& t) {
  check_element(op, t.dtype);
  check_dims(op, t.dims);
}

// Checks that `dims` are distinct dimension numbers of a rank-`rank` tensor.
void check_dim_set(const std::string& op, const char* what, const std::vector<int64_t>& dims,
                   int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      fail(op, std::string(what) + " dimension " + std::to_string(d) + " out of range for rank " +
                   std::to_string(rank));
    }
    if (seen[d]) fail(op, std::string(what) + " dimension " + std::to_string(d) + " repeated");
    seen[d] = true;
  }
}

// The sizes of the dimensions of `t` not listed in `excluded`, in order.
std::vector<int64_t> dims_except(const TensorType& t, const std::vector<int64_t>& excluded) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < t.rank(); ++d) {
    if (std::find(excluded.begin(), excluded.end(), d) == excluded.end()) kept.push_back(t.dims[d]);
  }
  return kept;
}

void check_index_scalar(const std::string& op, const TensorType& t, ElementType first) {
  if (t.rank() != 0 || !(type_class(t.dtype) & kInt)) {
    fail(op, "start index must be a rank-0 integer, got " + t.str());
  }
  if (t.dtype != first) fail(op, "start indices must share one element type");
}

// Rounds `v` to nearest-even in a binary float format with `exp_bits` exponent and `man_bits`
// mantissa bits (IEEE layout, with subnormals) and returns its bit pattern.
uint64_t float_bits(double v, int exp_bits, int man_bits) {
  const uint64_t sign = std::signbit(v) ? uint64_t{1} << (exp_bits + man_bits) : 0;
  const uint64_t inf = ((uint64_t{1} << exp_bits) - 1) << man_bits;
  if (std::isnan(v)) return sign | inf | (uint64_t{1} << (man_bits - 1));
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | inf;
  if (a == 0) return sign;
  const int bias = (1 << (exp_bits - 1)) - 1;
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e with f in [0.5, 1): the unbiased exponent is e - 1
  const bool subnormal = e - 1 < 1 - bias;
  const int ulp_exp = (subnormal ? 1 - bias : e - 1) - man_bits;
  const auto n = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, -ulp_exp)));  // ties to even
  // A subnormal that rounds up to 2^man_bits is the smallest normal, whose encoding is exactly n;
  // a normal mantissa that rounds up to 2^(man_bits+1) carries into the exponent the same way.
  uint64_t bits =
      subnormal ? n : (uint64_t(e - 1 + bias) << man_bits) + n - (uint64_t{1} << man_bits);
  return sign | std::min(bits, inf);
}

std::string hex(uint64_t bits, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llX", digits, static_cast<unsigned long long>(bits));
  return buf;
}

std::string float_literal(double v, ElementType t) {
  switch (t) {
    case ElementType::F64: {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      return hex(bits, 16);
    }
    case ElementType::F32:
      return hex(float_bits(v, 8, 23), 8);
    case ElementType::F16:
      return hex(float_bits(v, 5, 10), 4);
    case ElementType::BF16:
      return hex(float_bits(v, 8, 7), 4);
    default:
      fail("constant", std::string("not a floating type: ") + element_name(t));
  }
}

// Wraps `v` to the width of integer type `t` (two's complement), or spells a bool.
std::string int_literal(const std::string& op, int64_t v, ElementType t) {
  switch (t) {
    case ElementType::Bool:
      if (v != 0 && v != 1) fail(op, "bool constant must be 0 or 1, got " + std::to_string(v));
      return v ? "true" : "false";
    case ElementType::I8:
      return std::to_string(static_cast<int8_t>(v));
    case ElementType::I16:
      return std::to_string(static_cast<int16_t>(v));
    case ElementType::I32:
      return std::to_string(static_cast<int32_t>(v));
    case ElementType::I64:
      return std::to_string(v);
    case ElementType::U8:
      return std::to_string(static_cast<uint8_t>(v));
    case ElementType::U16:
      return std::to_string(static_cast<uint16_t>(v));
    case ElementType::U32:
      return std::to_string(static_cast<uint32_t>(v));
    case ElementType::U64:
      return std::to_string(static_cast<uint64_t>(v));
    default:
      fail(op, std::string("not an integer or bool type: ") + element_name(t));
  }
}

const char* cmp_name(Cmp c) {
  switch (c) {
    case Cmp::EQ:
      return "EQ";
    case Cmp::NE:
      return "NE";
    case Cmp::LT:
      return "LT";
    case Cmp::LE:
      return "LE";
    case Cmp::GT:
      return "GT";
    case Cmp::GE:
      return "GE";
  }
  fail("compare", "invalid direction " + std::to_string(static_cast<int>(c)));
}

}  // namespace

std::string precision_config(Precision precision) {
  const char* name = precision == Precision::kHighest ? "HIGHEST"
                     : precision == Precision::kHigh  ? "HIGH"
                                                      : nullptr;
  if (name == nullptr) return "";
  const std::string one = std::string("#stablehlo<precision ") + name + ">";
  return "precision_config = [" + one + ", " + one + "]";
}

void Builder::check_value(const char* op, const Value& v) const {
  if (v.id < 0 || v.id >= static_cast<int>(types_.size()) || !(types_[v.id] == v.type)) {
    fail(op, "value %" + std::to_string(v.id) + " of type " + v.type.str() +
                 " does not belong to this builder");
  }
  // Values of this region or of a region enclosing it (a while region may use them directly).
  int scope = scope_;
  while (scope != scope_of_[v.id] && scope != 0) scope = scope_parent_[scope];
  if (scope != scope_of_[v.id]) {
    fail(op, "value %" + std::to_string(v.id) + " belongs to another region");
  }
}

Value Builder::add_op(const std::string& op, const std::vector<Value>& operands,
                      const TensorType& result, const std::string& attrs,
                      const std::string& regions) {
  return add_ops("stablehlo." + op, operands, {result}, attrs, regions)[0];
}

std::vector<Value> Builder::add_ops(const std::string& full_name,
                                    const std::vector<Value>& operands,
                                    const std::vector<TensorType>& results,
                                    const std::string& attrs, const std::string& regions) {
  const int first = static_cast<int>(types_.size());
  const bool one = results.size() == 1;
  std::string names, types, result_types;
  for (size_t i = 0; i < operands.size(); ++i) {
    names += (i ? ", " : "") + names_[operands[i].id];
    types += (i ? ", " : "") + operands[i].type.str();
  }
  for (size_t i = 0; i < results.size(); ++i) {
    result_types += (i ? ", " : "") + results[i].str();
  }
  std::string line = "    %" + std::to_string(first) +
                     (one ? "" : ":" + std::to_string(results.size())) + " = \"" + full_name +
                     "\"(" + names + ")";
  if (!regions.empty()) line += " (" + regions + ")";
  if (!attrs.empty()) line += " {" + attrs + "}";
  line += " : (" + types + ") -> " + (one ? result_types : "(" + result_types + ")") + "\n";
  body_ += line;
  std::vector<Value> out;
  for (size_t i = 0; i < results.size(); ++i) {
    const int id = static_cast<int>(types_.size());
    types_.push_back(results[i]);
    scope_of_.push_back(scope_);
    names_.push_back("%" + std::to_string(first) + (one ? "" : "#" + std::to_string(i)));
    out.push_back(Value{id, results[i]});
  }
  return out;
}

std::vector<Value> Builder::op(const std::string& name, const std::vector<Value>& operands,
                               const std::vector<TensorType>& results, const std::string& attrs,
                               const std::string& regions) {
  for (const Value& v : operands) check_value(name.c_str(), v);
  if (results.empty()) fail(name.c_str(), "an op needs at least one result");
  return add_ops("stablehlo." + name, operands, results, attrs, regions);
}

bool Builder::add_functions(const std::string& key, const std::string& text) {
  if (std::find(function_keys_.begin(), function_keys_.end(), key) != function_keys_.end()) {
    return false;
  }
  function_keys_.push_back(key);
  functions_ += text;
  if (!text.empty() && text.back() != '\n') functions_ += '\n';
  return true;
}

std::vector<Value> Builder::call(const std::string& callee, const std::vector<Value>& operands,
                                 const std::vector<TensorType>& results) {
  for (const Value& v : operands) check_value("call", v);
  if (results.empty()) fail("call", "a call needs at least one result");
  const bool valid =
      !callee.empty() && callee != "main" && !std::isdigit(static_cast<unsigned char>(callee[0])) &&
      std::all_of(callee.begin(), callee.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!valid) fail("call", "invalid callee name '" + callee + "'");
  return add_ops("func.call", operands, results, "callee = @" + callee, "");
}

std::string Builder::region(
    const std::vector<TensorType>& arg_types,
    const std::function<RegionBody(const std::vector<std::string>&, const std::string&)>& body) {
  const std::string prefix = "%g" + std::to_string(regions_made_++) + "_";
  std::vector<std::string> args;
  std::string header = "{\n    ^bb0(";
  for (size_t i = 0; i < arg_types.size(); ++i) {
    args.push_back(prefix + "a" + std::to_string(i));
    header += (i ? ", " : "") + args.back() + ": " + arg_types[i].str();
  }
  RegionBody b = body(args, prefix);
  std::string names, types;
  for (size_t i = 0; i < b.returned.size(); ++i) {
    names += (i ? ", " : "") + b.returned[i];
    types += (i ? ", " : "") + b.returned_types.at(i).str();
  }
  return header + "):\n" + b.lines + "      \"stablehlo.return\"(" + names + ") : (" + types +
         ") -> ()\n    }";
}

std::vector<Value> Builder::while_loop(const std::vector<Value>& init, const LoopFn& cond,
                                       const LoopFn& body) {
  if (init.empty()) fail("while", "a loop needs at least one carried value");
  std::vector<TensorType> types;
  for (const Value& v : init) {
    check_value("while", v);
    types.push_back(v.type);
  }
  // Builds one region: its arguments, then fn's ops, then the return of what fn gives.
  auto build = [&](const LoopFn& fn, const char* what, bool is_cond) {
    const int outer = scope_;
    std::string saved;
    saved.swap(body_);
    scope_ = ++scopes_made_;
    scope_parent_.resize(scopes_made_ + 1);
    scope_parent_[scope_] = outer;
    const std::string prefix = "%w" + std::to_string(scope_) + "_";
    std::vector<Value> args;
    std::string header = "{\n    ^bb0(";
    for (size_t i = 0; i < types.size(); ++i) {
      const int id = static_cast<int>(types_.size());
      types_.push_back(types[i]);
      scope_of_.push_back(scope_);
      names_.push_back(prefix + std::to_string(i));
      args.push_back(Value{id, types[i]});
      header += (i ? ", " : "") + names_.back() + ": " + types[i].str();
    }
    std::vector<Value> returned;
    try {
      returned = fn(*this, args);
      const bool ok =
          is_cond ? returned.size() == 1 && returned[0].type == TensorType{ElementType::Bool, {}}
                  : returned.size() == types.size();
      if (!ok) fail("while", std::string(what) + " returns the wrong number or types of values");
      for (size_t i = 0; i < returned.size(); ++i) {
        check_value("while", returned[i]);
        if (!is_cond && !(returned[i].type == types[i])) {
          fail("while", "body result " + std::to_string(i) + " has type " + returned[i].type.str() +
                            ", carried " + types[i].str());
        }
      }
    } catch (...) {
      body_.swap(saved);
      scope_ = outer;
      throw;
    }
    std::string names, rtypes;
    for (size_t i = 0; i < returned.size(); ++i) {
      names += (i ? ", " : "") + names_[returned[i].id];
      rtypes += (i ? ", " : "") + returned[i].type.str();
    }
    std::string text = header + "):\n" + body_ + "      \"stablehlo.return\"(" + names + ") : (" +
                       rtypes + ") -> ()\n    }";
    body_.swap(saved);
    scope_ = outer;
    return text;
  };
  const std::string regions = build(cond, "cond", true) + ", " + build(body, "body", false);
  return add_ops("stablehlo.while", init, types, "", regions);
}

std::string Builder::combiner_region(ElementType t, const char* combine_op) const {
  const std::string p = "%r" + std::to_string(types_.size()) + "_";
  const std::string s = TensorType{t, {}}.str();
  std::string r = "{\n    ^bb0(" + p + "a: " + s + ", " + p + "b: " + s + "):\n";
  std::string result = p + "b";
  if (combine_op) {
    result = p + "c";
    r += "      " + result + " = \"stablehlo." + combine_op + "\"(" + p + "a, " + p + "b) : (" + s +
         ", " + s + ") -> " + s + "\n";
  }
  return r + "      \"stablehlo.return\"(" + result + ") : (" + s + ") -> ()\n    }";
}

Value Builder::parameter(const TensorType& type) {
  check_type("parameter", type);
  if (scope_ != 0) fail("parameter", "parameters cannot be added inside a region");
  const int id = static_cast<int>(types_.size());
  names_.push_back("%arg" + std::to_string(parameters_.size()));
  parameters_.push_back(type);
  aliased_result_.push_back(-1);
  types_.push_back(type);
  scope_of_.push_back(0);
  return Value{id, type};
}

Value Builder::constant_float(double value, ElementType type) {
  check_element("constant_float", type);
  if (type_class(type) != kFloat) {
    fail("constant_float", std::string("not a floating type: ") + element_name(type));
  }
  return splat(value, TensorType{type, {}});
}

Value Builder::constant_int(int64_t value, ElementType type) {
  check_element("constant_int", type);
  const TensorType t{type, {}};
  return add_op("constant", {}, t,
                "value = dense<" + int_literal("constant_int", value, type) + "> : " + t.str());
}

Value Builder::splat(double value, const TensorType& type) {
  check_type("splat", type);
  if (type_class(type.dtype) == kComplex) {
    const TensorType part{runtime::real_part_type(type.dtype), type.dims};
    return complex(splat(value, part), splat(0, part));
  }
  std::string literal;
  if (type_class(type.dtype) == kFloat) {
    literal = float_literal(value, type.dtype);
  } else {
    // Integral and within int64 (2^63 is exactly representable; the lower bound is inclusive).
    if (!(std::trunc(value) == value && value >= -9223372036854775808.0 &&
          value < 9223372036854775808.0)) {
      fail("splat", "value " + std::to_string(value) + " is not an integer for " + type.str());
    }
    literal = int_literal("splat", static_cast<int64_t>(value), type.dtype);
  }
  return add_op("constant", {}, type, "value = dense<" + literal + "> : " + type.str());
}

Value Builder::iota(const TensorType& type, int64_t dimension) {
  check_type("iota", type);
  if (type_class(type.dtype) == kBool) fail("iota", "bool result not supported");
  if (dimension < 0 || dimension >= type.rank()) {
    fail("iota", "dimension " + std::to_string(dimension) + " out of range for " + type.str());
  }
  return add_op("iota", {}, type, "iota_dimension = " + std::to_string(dimension) + " : i64");
}

Value Builder::binary(const char* op, Value lhs, Value rhs) {
  const OpInfo* info = find_op(kBinaryOps, op);
  if (!info) fail("binary", std::string("unknown op '") + op + "'");
  check_value(op, lhs);
  check_value(op, rhs);
  if (!(lhs.type == rhs.type)) {
    fail(op, "operand types differ: " + lhs.type.str() + " vs " + rhs.type.str());
  }
  if (!(type_class(lhs.type.dtype) & info->accepts)) {
    fail(op, std::string("element type ") + element_name(lhs.type.dtype) + " not supported");
  }
  return add_op(op, {lhs, rhs}, lhs.type);
}

Value Builder::unary(const char* op, Value operand) {
  const OpInfo* info = find_op(kUnaryOps, op);
  if (!info) fail("unary", std::string("unknown op '") + op + "'");
  check_value(op, operand);
  if (!(type_class(operand.type.dtype) & info->accepts)) {
    fail(op, std::string("element type ") + element_name(operand.type.dtype) + " not supported");
  }
  TensorType result = operand.type;
  if (info->bool_result) result.dtype = ElementType::Bool;
  if (info->real_result) result.dtype = runtime::real_part_type(result.dtype);
  return add_op(op, {operand}, result);
}

Value Builder::compare(Cmp direction, Value lhs, Value rhs) {
  check_value("compare", lhs);
  check_value("compare", rhs);
  if (!(lhs.type == rhs.type)) {
    fail("compare", "operand types differ: " + lhs.type.str() + " vs " + rhs.type.str());
  }
  const unsigned c = type_class(lhs.type.dtype);
  if (c == kComplex && direction != Cmp::EQ && direction != Cmp::NE) {
    fail("compare", "complex operands support only EQ and NE, got " + lhs.type.str());
  }
  const char* compare_type = c & (kFloat | kComplex) ? "FLOAT"
                             : c == kSigned          ? "SIGNED"
                                                     : "UNSIGNED";
  return add_op("compare", {lhs, rhs}, TensorType{ElementType::Bool, lhs.type.dims},
                std::string("comparison_direction = #stablehlo<comparison_direction ") +
                    cmp_name(direction) + ">, compare_type = #stablehlo<comparison_type " +
                    compare_type + ">");
}

Value Builder::select(Value pred, Value on_true, Value on_false) {
  check_value("select", pred);
  check_value("select", on_true);
  check_value("select", on_false);
  if (pred.type.dtype != ElementType::Bool)
    fail("select", "pred must be bool, got " + pred.type.str());
  if (!(on_true.type == on_false.type)) {
    fail("select", "branch types differ: " + on_true.type.str() + " vs " + on_false.type.str());
  }
  if (pred.type.rank() != 0 && pred.type.dims != on_true.type.dims) {
    fail("select", "pred " + pred.type.str() + " must be rank 0 or match " + on_true.type.str());
  }
  return add_op("select", {pred, on_true, on_false}, on_true.type);
}

Value Builder::convert(Value operand, ElementType to) {
  check_value("convert", operand);
  check_element("convert", to);
  const bool from_complex = type_class(operand.type.dtype) == kComplex;
  if (from_complex && to == ElementType::Bool) {  // true when either part is nonzero
    const Value zero =
        splat(0, TensorType{runtime::real_part_type(operand.type.dtype), operand.type.dims});
    return binary("or", compare(Cmp::NE, unary("real", operand), zero),
                  compare(Cmp::NE, unary("imag", operand), zero));
  }
  if (from_complex && type_class(to) != kComplex) {  // PyTorch drops the imaginary part
    const Value re = unary("real", operand);
    return re.type.dtype == to ? re : convert(re, to);
  }
  if (operand.type.dtype == ElementType::Bool && type_class(to) == kComplex) {
    return convert(convert(operand, runtime::real_part_type(to)), to);
  }
  return add_op("convert", {operand}, TensorType{to, operand.type.dims});
}

Value Builder::complex(Value re, Value im) {
  check_value("complex", re);
  check_value("complex", im);
  if (!(re.type == im.type) ||
      (re.type.dtype != ElementType::F32 && re.type.dtype != ElementType::F64)) {
    fail("complex",
         "parts must be f32 or f64 of one type, got " + re.type.str() + " and " + im.type.str());
  }
  const ElementType t = re.type.dtype == ElementType::F32 ? ElementType::C64 : ElementType::C128;
  return add_op("complex", {re, im}, TensorType{t, re.type.dims});
}

Value Builder::bitcast_convert(Value operand, ElementType to) {
  check_value("bitcast_convert", operand);
  check_element("bitcast_convert", to);
  if (type_class(operand.type.dtype) == kComplex || type_class(to) == kComplex) {
    fail("bitcast_convert", "complex types have no bit layout; bitcast their real and imag parts");
  }
  const int from_bits = bit_width(operand.type.dtype), to_bits = bit_width(to);
  const std::string what =
      std::string(element_name(operand.type.dtype)) + " to " + element_name(to);
  if (operand.type.dtype == ElementType::Bool || to == ElementType::Bool) {
    if (from_bits != to_bits) fail("bitcast_convert", "bit widths differ: " + what);
  }
  std::vector<int64_t> dims = operand.type.dims;
  if (from_bits > to_bits) {
    dims.push_back(from_bits / to_bits);  // a wider element splits into a new minor dimension
  } else if (from_bits < to_bits) {
    const int64_t ratio = to_bits / from_bits;
    if (dims.empty() || dims.back() != ratio) {
      fail("bitcast_convert", what + " needs a last dimension of " + std::to_string(ratio) +
                                  ", got " + operand.type.str());
    }
    dims.pop_back();  // the minor dimension's elements join into one
  }
  return add_op("bitcast_convert", {operand}, TensorType{to, std::move(dims)});
}

Value Builder::reshape(Value operand, const std::vector<int64_t>& dims) {
  check_value("reshape", operand);
  const TensorType result{operand.type.dtype, dims};
  check_dims("reshape", dims);
  if (result.num_elements() != operand.type.num_elements()) {
    fail("reshape", "element count differs: " + operand.type.str() + " to " + result.str());
  }
  return add_op("reshape", {operand}, result);
}

Value Builder::broadcast_in_dim(Value operand, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& broadcast_dims) {
  const char* op = "broadcast_in_dim";
  check_value(op, operand);
  check_dims(op, dims);
  const TensorType result{operand.type.dtype, dims};
  if (static_cast<int64_t>(broadcast_dims.size()) != operand.type.rank()) {
    fail(op, "broadcast_dims [" + join(broadcast_dims) + "] must have one entry per dimension of " +
                 operand.type.str());
  }
  check_dim_set(op, "broadcast", broadcast_dims, result.rank());
  for (size_t i = 0; i < broadcast_dims.size(); ++i) {
    const int64_t from = operand.type.dims[i], to = dims[broadcast_dims[i]];
    if (from != 1 && from != to) {
      fail(op, "operand dimension " + std::to_string(i) + " of size " + std::to_string(from) +
                   " cannot broadcast to size " + std::to_string(to));
    }
  }
  return add_op(op, {operand}, result, "broadcast_dimensions = " + i64_array(broadcast_dims));
}

Value Builder::transpose(Value operand, const std::vector<int64_t>& permutation) {
  check_value("transpose", operand);
  if (static_cast<int64_t>(permutation.size()) != operand.type.rank()) {
    fail("transpose",
         "permutation [" + join(permutation) + "] does not match " + operand.type.str());
  }
  check_dim_set("transpose", "permutation", permutation, operand.type.rank());
  TensorType result{operand.type.dtype, {}};
  for (int64_t p : permutation) result.dims.push_back(operand.type.dims[p]);
  return add_op("transpose", {operand}, result, "permutation = " + i64_array(permutation));
}

Value Builder::slice(Value operand, const std::vector<int64_t>& start,
                     const std::vector<int64_t>& limit, const std::vector<int64_t>& strides) {
  check_value("slice", operand);
  const int64_t rank = operand.type.rank();
  if (static_cast<int64_t>(start.size()) != rank || static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank) {
    fail("slice", "start, limit and strides need one entry per dimension of " + operand.type.str());
  }
  TensorType result{operand.type.dtype, {}};
  for (int64_t i = 0; i < rank; ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > operand.type.dims[i] || strides[i] < 1) {
      fail("slice", "bad bounds " + std::to_string(start[i]) + ":" + std::to_string(limit[i]) +
                        ":" + std::to_string(strides[i]) + " for dimension " + std::to_string(i) +
                        " of " + operand.type.str());
    }
    result.dims.push_back((limit[i] - start[i] + strides[i] - 1) / strides[i]);
  }
  return add_op("slice", {operand}, result,
                "start_indices = " + i64_array(start) + ", limit_indices = " + i64_array(limit) +
                    ", strides = " + i64_array(strides));
}

Value Builder::concatenate(const std::vector<Value>& operands, int64_t dimension) {
  if (operands.empty()) fail("concatenate", "no operands");
  for (const Value& v : operands) check_value("concatenate", v);
  const TensorType& first = operands[0].type;
  if (dimension < 0 || dimension >= first.rank()) {
    fail("concatenate",
         "dimension " + std::to_string(dimension) + " out of range for " + first.str());
  }
  TensorType result = first;
  result.dims[dimension] = 0;
  for (const Value& v : operands) {
    bool ok = v.type.dtype == first.dtype && v.type.rank() == first.rank();
    for (int64_t i = 0; ok && i < first.rank(); ++i) {
      ok = i == dimension || v.type.dims[i] == first.dims[i];
    }
    if (!ok) fail("concatenate", "operand " + v.type.str() + " does not fit " + first.str());
    result.dims[dimension] += v.type.dims[dimension];
  }
  return add_op("concatenate", operands, result,
                "dimension = " + std::to_string(dimension) + " : i64");
}

Value Builder::dynamic_slice(Value operand, const std::vector<Value>& start,
                             const std::vector<int64_t>& sizes) {
  const char* op = "dynamic_slice";
  check_value(op, operand);
  const int64_t rank = operand.type.rank();
  if (static_cast<int64_t>(start.size()) != rank || static_cast<int64_t>(sizes.size()) != rank) {
    fail(op, "start and sizes need one entry per dimension of " + operand.type.str());
  }
  std::vector<Value> operands{operand};
  for (const Value& s : start) {
    check_value(op, s);
    check_index_scalar(op, s.type, start[0].type.dtype);
    operands.push_back(s);
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] < 0 || sizes[i] > operand.type.dims[i]) {
      fail(op, "size " + std::to_string(sizes[i]) + " out of range for dimension " +
                   std::to_string(i) + " of " + operand.type.str());
    }
  }
  return add_op(op, operands, TensorType{operand.type.dtype, sizes},
                "slice_sizes = " + i64_array(sizes));
}

Value Builder::dynamic_update_slice(Value operand, Value update, const std::vector<Value>& start) {
  const char* op = "dynamic_update_slice";
  check_value(op, operand);
  check_value(op, update);
  const int64_t rank = operand.type.rank();
  if (update.type.dtype != operand.type.dtype || update.type.rank() != rank) {
    fail(op, "update " + update.type.str() + " does not fit " + operand.type.str());
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (update.type.dims[i] > operand.type.dims[i]) {
      fail(op, "update " + update.type.str() + " larger than " + operand.type.str());
    }
  }
  if (static_cast<int64_t>(start.size()) != rank) {
    fail(op, "start needs one entry per dimension of " + operand.type.str());
  }
  std::vector<Value> operands{operand, update};
  for (const Value& s : start) {
    check_value(op, s);
    check_index_scalar(op, s.type, start[0].type.dtype);
    operands.push_back(s);
  }
  return add_op(op, operands, operand.type);
}

Value Builder::dot_general(Value lhs, Value rhs, const std::vector<int64_t>& lhs_batch,
                           const std::vector<int64_t>& rhs_batch,
                           const std::vector<int64_t>& lhs_contract,
                           const std::vector<int64_t>& rhs_contract, Precision precision,
                           std::optional<ElementType> result_type) {
  const char* op = "dot_general";
  check_value(op, lhs);
  check_value(op, rhs);
  if (lhs.type.dtype != rhs.type.dtype) {
    fail(op, "element types differ: " + lhs.type.str() + " vs " + rhs.type.str());
  }
  if (lhs_batch.size() != rhs_batch.size() || lhs_contract.size() != rhs_contract.size()) {
    fail(op, "lhs and rhs need as many batch and as many contracting dimensions");
  }
  std::vector<int64_t> lhs_used = lhs_batch, rhs_used = rhs_batch;
  lhs_used.insert(lhs_used.end(), lhs_contract.begin(), lhs_contract.end());
  rhs_used.insert(rhs_used.end(), rhs_contract.begin(), rhs_contract.end());
  check_dim_set(op, "lhs batch/contracting", lhs_used, lhs.type.rank());
  check_dim_set(op, "rhs batch/contracting", rhs_used, rhs.type.rank());
  for (size_t i = 0; i < lhs_used.size(); ++i) {
    if (lhs.type.dims[lhs_used[i]] != rhs.type.dims[rhs_used[i]]) {
      fail(op, std::string(i < lhs_batch.size() ? "batch" : "contracting") + " sizes differ: lhs " +
                   lhs.type.str() + " dimension " + std::to_string(lhs_used[i]) + " vs rhs " +
                   rhs.type.str() + " dimension " + std::to_string(rhs_used[i]));
    }
  }
  const bool widening =
      (lhs.type.dtype == ElementType::BF16 || lhs.type.dtype == ElementType::F16) &&
      result_type == ElementType::F32;
  if (result_type && *result_type != lhs.type.dtype && !widening) {
    fail(op, std::string("result type ") + mlir_element(*result_type) + " for " + lhs.type.str() +
                 " operands: only bf16/f16 operands may give an f32 result");
  }
  TensorType result{result_type.value_or(lhs.type.dtype), {}};
  for (int64_t d : lhs_batch) result.dims.push_back(lhs.type.dims[d]);
  for (int64_t n : dims_except(lhs.type, lhs_used)) result.dims.push_back(n);
  for (int64_t n : dims_except(rhs.type, rhs_used)) result.dims.push_back(n);
  // Empty dimension lists are left out, as MLIR prints them.
  std::string numbers;
  const std::pair<const char*, const std::vector<int64_t>*> fields[] = {
      {"lhs_batching_dimensions", &lhs_batch},
      {"rhs_batching_dimensions", &rhs_batch},
      {"lhs_contracting_dimensions", &lhs_contract},
      {"rhs_contracting_dimensions", &rhs_contract}};
  for (const auto& [name, dims] : fields) {
    if (dims->empty()) continue;
    numbers += (numbers.empty() ? "" : ", ") + std::string(name) + " = " + list(*dims);
  }
  std::string attrs = "dot_dimension_numbers = #stablehlo.dot<" + numbers + ">";
  if (precision != Precision::kDefault) attrs += ", " + precision_config(precision);
  return add_op(op, {lhs, rhs}, result, attrs);
}

Value Builder::reduce(Value operand, Value init, const std::vector<int64_t>& dims,
                      ReduceKind kind) {
  check_value("reduce", operand);
  check_value("reduce", init);
  if (!(init.type == TensorType{operand.type.dtype, {}})) {
    fail("reduce", "init " + init.type.str() + " must be a rank-0 tensor of the operand's type " +
                       operand.type.str());
  }
  check_dim_set("reduce", "reduced", dims, operand.type.rank());
  const char* combine = nullptr;
  unsigned accepts = kNumber | kBool;
  switch (kind) {
    case ReduceKind::Sum:
      combine = "add";
      accepts |= kComplex;
      break;
    case ReduceKind::Prod:
      combine = "multiply";
      accepts |= kComplex;
      break;
    case ReduceKind::Max:
      combine = "maximum";
      break;
    case ReduceKind::Min:
      combine = "minimum";
      break;
    case ReduceKind::And:
      combine = "and";
      accepts = kInt | kBool;
      break;
    case ReduceKind::Or:
      combine = "or";
      accepts = kInt | kBool;
      break;
    case ReduceKind::Xor:
      combine = "xor";
      accepts = kInt | kBool;
      break;
  }
  if (!combine) fail("reduce", "invalid kind " + std::to_string(static_cast<int>(kind)));
  if (!(type_class(operand.type.dtype) & accepts)) {
    fail("reduce", std::string(combine) + " does not support element type " +
                       element_name(operand.type.dtype));
  }
  const TensorType result{operand.type.dtype, dims_except(operand.type, dims)};
  return add_op("reduce", {operand, init}, result, "dimensions = " + i64_array(dims),
                combiner_region(operand.type.dtype, combine));
}

Value Builder::gather_1d(Value operand, Value indices) {
  check_value("gather_1d", operand);
  check_value("gather_1d", indices);
  if (operand.type.rank() != 1)
    fail("gather_1d", "operand must be rank 1, got " + operand.type.str());
  if (!(type_class(indices.type.dtype) & kInt)) {
    fail("gather_1d", "indices must be integers, got " + indices.type.str());
  }
  return add_op(
      "gather", {operand, indices}, TensorType{operand.type.dtype, indices.type.dims},
      "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = "
      "[0], index_vector_dim = " +
          std::to_string(indices.type.rank()) +
          ">, slice_sizes = array<i64: 1>, indices_are_sorted = false");
}

Value Builder::scatter_1d(Value operand, Value indices, Value updates) {
  check_value("scatter_1d", operand);
  check_value("scatter_1d", indices);
  check_value("scatter_1d", updates);
  if (operand.type.rank() != 1)
    fail("scatter_1d", "operand must be rank 1, got " + operand.type.str());
  if (!(type_class(indices.type.dtype) & kInt)) {
    fail("scatter_1d", "indices must be integers, got " + indices.type.str());
  }
  if (!(updates.type == TensorType{operand.type.dtype, indices.type.dims})) {
    fail("scatter_1d", "updates " + updates.type.str() + " must have the dims of indices " +
                           indices.type.str() + " and the element type of operand " +
                           operand.type.str());
  }
  return add_op("scatter", {operand, indices, updates}, operand.type,
                "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
                "scatter_dims_to_operand_dims = [0], index_vector_dim = " +
                    std::to_string(indices.type.rank()) +
                    ">, indices_are_sorted = false, unique_indices = false",
                combiner_region(operand.type.dtype, nullptr));
}

void Builder::alias(int parameter, int result) {
  if (parameter < 0 || parameter >= num_parameters() || result < 0) {
    throw std::invalid_argument("alias: parameter " + std::to_string(parameter) + " or result " +
                                std::to_string(result) + " out of range");
  }
  aliased_result_[parameter] = result;
}

std::string Builder::emit(const std::vector<Value>& results) const {
  std::string args, result_types, result_names;
  std::vector<bool> result_aliased(results.size(), false);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    args += (i ? ", " : "") + std::string("%arg") + std::to_string(i) + ": " + parameters_[i].str();
    const int r = aliased_result_[i];
    if (r < 0) continue;
    if (static_cast<size_t>(r) >= results.size() || result_aliased[r] ||
        !(results[r].type == parameters_[i])) {
      throw std::invalid_argument("emit: parameter " + std::to_string(i) +
                                  " cannot be donated to result " + std::to_string(r));
    }
    result_aliased[r] = true;
    args += " {tf.aliasing_output = " + std::to_string(r) + " : i32}";
  }
  for (size_t i = 0; i < results.size(); ++i) {
    check_value("emit", results[i]);
    result_types += (i ? ", " : "") + results[i].type.str();
    result_names += (i ? ", " : "") + names_[results[i].id];
  }
  return "module @torch_pjrt {\n  func.func public @main(" + args + ") -> (" + result_types +
         ") {\n" + body_ + "    \"func.return\"(" + result_names + ") : (" + result_types +
         ") -> ()\n  }\n" + functions_ + "}\n";
}

}  // namespace torch_pjrt::hlo
