// Builds one StableHLO function @main as MLIR text (generic op syntax), value by value.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hlo/types.h"

namespace torch_pjrt::hlo {

// An SSA value of the function being built.
struct Value {
  int id = -1;
  TensorType type;
};

enum class Cmp { EQ, NE, LT, LE, GT, GE };
// Precision of dot_general and convolution where hardware has reduced-precision passes (bf16
// passes on TPU, TF32 on GPU); XLA:CPU computes float32 exactly whatever it says.
enum class Precision { kDefault, kHigh, kHighest };
// `precision_config = [...]` for both operands, or "" for kDefault (StableHLO's default).
std::string precision_config(Precision precision);
enum class ReduceKind { Sum, Prod, Max, Min, And, Or, Xor };

// Every method validates its operands (types, ranks, dimension bounds) and throws
// std::invalid_argument naming the op and the problem: a malformed program is never handed to a
// plugin from here.
class Builder {
 public:
  // Adds an argument of @main; arguments are numbered in call order.
  Value parameter(const TensorType& type);

  // Rank-0 constants of a floating (constant_float) or integer/bool (constant_int) type. Floats are
  // spelled exactly (hex bit pattern); integers are truncated to the type; bool takes 0/1.
  Value constant_float(double value, ElementType type);
  Value constant_int(int64_t value, ElementType type);
  // Constant of `type` with every element equal to `value` (a splat); for integer and bool types
  // `value` must be integral (bool: 0/1).
  Value splat(double value, const TensorType& type);

  Value iota(const TensorType& type, int64_t dimension);

  // Elementwise on operands of identical type. `op` is the StableHLO op name without the dialect,
  // e.g. "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder",
  // "and", "or", "xor", "atan2", "shift_left". Unknown names and unsupported element types throw.
  Value binary(const char* op, Value lhs, Value rhs);
  // e.g. "negate", "abs", "exponential", "log", "sqrt", "rsqrt", "tanh", "logistic", "floor",
  // "ceil", "sine", "cosine", "not", "sign"; "is_finite" gives bool; "real", "imag" and "abs" of
  // a complex operand give its parts' real type.
  Value unary(const char* op, Value operand);
  // Result has the same dims with element type bool. Uses the FLOAT/SIGNED/UNSIGNED comparison type
  // that matches the operand type.
  Value compare(Cmp direction, Value lhs, Value rhs);
  Value select(Value pred, Value on_true, Value on_false);
  // Complex to real types keeps the real part (as PyTorch's casts do), to bool tests both parts.
  Value convert(Value operand, ElementType to);
  // A complex value from f32 (complex64) or f64 (complex128) parts of one type.
  Value complex(Value re, Value im);
  // Reinterprets bits (not bool). To a narrower type the result gains a minor dimension of
  // width ratio; to a wider one the operand's last dimension must be that ratio and is dropped.
  Value bitcast_convert(Value operand, ElementType to);

  Value reshape(Value operand, const std::vector<int64_t>& dims);
  // Result dims `dims`; operand dimension i maps to result dimension broadcast_dims[i].
  Value broadcast_in_dim(Value operand, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& broadcast_dims);
  Value transpose(Value operand, const std::vector<int64_t>& permutation);
  Value slice(Value operand, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
              const std::vector<int64_t>& strides);
  Value concatenate(const std::vector<Value>& operands, int64_t dimension);
  // Start indices are rank-0 integer values.
  Value dynamic_slice(Value operand, const std::vector<Value>& start,
                      const std::vector<int64_t>& sizes);
  Value dynamic_update_slice(Value operand, Value update, const std::vector<Value>& start);

  // The result has element type `result_type` (the operands' by default): bfloat16 or float16
  // operands with a float32 result accumulate in float32.
  Value dot_general(Value lhs, Value rhs, const std::vector<int64_t>& lhs_batch,
                    const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
                    const std::vector<int64_t>& rhs_contract,
                    Precision precision = Precision::kDefault,
                    std::optional<ElementType> result_type = std::nullopt);
  // Reduces `dims` of `operand` with the scalar (rank-0) `init` of the same element type.
  Value reduce(Value operand, Value init, const std::vector<int64_t>& dims, ReduceKind kind);

  // result[i...] = operand[indices[i...]] for a rank-1 operand and integer `indices` of any shape.
  Value gather_1d(Value operand, Value indices);
  // A copy of rank-1 `operand` with operand[indices[i...]] = updates[i...]; `updates` has the dims
  // of `indices`. Indices must be unique for a defined result.
  Value scatter_1d(Value operand, Value indices, Value updates);

  // Generic form for StableHLO ops without a dedicated method (convolution, reduce_window, sort,
  // rng_bit_generator, general gather/scatter, ...): appends `"stablehlo.<name>"(operands)` with
  // `regions` and the attribute dictionary body `attrs` inserted verbatim, producing one value per
  // entry of `results`. Operands are checked to belong to this builder; the caller is responsible
  // for the attributes and result types being right.
  std::vector<Value> op(const std::string& name, const std::vector<Value>& operands,
                        const std::vector<TensorType>& results, const std::string& attrs = "",
                        const std::string& regions = "");
  // A region `{ ^bb0(<args>): ... "stablehlo.return"(...) }` for `op`: `body` receives the SSA
  // names of the region's arguments (scalars of `arg_types`, e.g. "%r12_0") and returns the body
  // lines followed by the names of the returned values. Region names never collide with the
  // function's or another region's.
  struct RegionBody {
    std::string lines;                  // statements, each ending in '\n'
    std::vector<std::string> returned;  // SSA names returned, with `returned_types`
    std::vector<TensorType> returned_types;
  };
  std::string region(const std::vector<TensorType>& arg_types,
                     const std::function<RegionBody(const std::vector<std::string>& args,
                                                    const std::string& prefix)>& body);
  // The combiner region used by reduce: two scalars of `t` combined with `combine_op` (e.g.
  // "add", "maximum"), or returning the second when null.
  std::string combiner(ElementType t, const char* combine_op) {
    return combiner_region(t, combine_op);
  }

  // stablehlo.while carrying `init`: `cond` and `body` receive the carried values as region
  // arguments and build on this builder (values made there belong to that region only: using
  // them outside throws; values of enclosing regions may be used inside); `cond` returns a
  // rank-0 bool, `body` the next carried values with the same types. Returns the final values.
  using LoopFn = std::function<std::vector<Value>(Builder&, const std::vector<Value>&)>;
  std::vector<Value> while_loop(const std::vector<Value>& init, const LoopFn& cond,
                                const LoopFn& body);

  // Function definitions emitted next to @main (a custom kernel's), added once per `key`: `text`
  // holds whole `func.func` definitions whose symbols collide neither with @main nor with another
  // key's. Returns false (adding nothing) when `key` was already added.
  bool add_functions(const std::string& key, const std::string& text);
  // `func.call @callee(operands)`, which must return `results` (a callee added by add_functions).
  std::vector<Value> call(const std::string& callee, const std::vector<Value>& operands,
                          const std::vector<TensorType>& results);

  // Marks parameter `parameter` as donated to result `result` (`tf.aliasing_output`): the program
  // may write that result into the argument's buffer, which callers must treat as consumed.
  // Checked by emit(): same type, each result aliased at most once.
  void alias(int parameter, int result);

  // The whole module: `module @torch_pjrt { func.func public @main(...) -> (...) { ... } }`,
  // followed by the functions of add_functions.
  // Results may repeat a value or be parameters.
  std::string emit(const std::vector<Value>& results) const;

  int num_parameters() const { return static_cast<int>(parameters_.size()); }

 private:
  // Appends `%N:k = "<full_name>"(operands) (regions) {attrs} : (...) -> (...)` (one result:
  // `%N = ...`) and returns its results; `full_name` includes the dialect.
  std::vector<Value> add_ops(const std::string& full_name, const std::vector<Value>& operands,
                             const std::vector<TensorType>& results, const std::string& attrs,
                             const std::string& regions);
  // Throws unless `v` is a value of this builder with its recorded type.
  void check_value(const char* op, const Value& v) const;
  // Appends `%N = "stablehlo.<op>"(operands) (regions) {attrs} : (operand types) -> result` and
  // returns %N. `regions` and `attrs` are inserted verbatim when non-empty.
  Value add_op(const std::string& op, const std::vector<Value>& operands, const TensorType& result,
               const std::string& attrs = "", const std::string& regions = "");
  // Region `^bb0(%rN_a: T, %rN_b: T): ... "stablehlo.return"` combining two scalars with
  // `combine_op`, or returning %rN_b when it is null. Named after the id of the value it will
  // belong to, so its SSA names never collide with the function's.
  std::string combiner_region(ElementType t, const char* combine_op) const;

  std::vector<TensorType> parameters_;
  std::vector<int> aliased_result_;   // by parameter; -1 when not donated
  std::vector<TensorType> types_;     // by value id
  std::vector<std::string> names_;    // SSA name by value id: "%arg<K>", "%<id>" or "%<id>#<k>"
  std::vector<int> scope_of_;         // by value id: 0 for @main's body, else a while region's
  int scope_ = 0;                     // where values are being added
  std::vector<int> scope_parent_{0};  // by scope: the region enclosing it (0 for @main's body)
  int scopes_made_ = 0;
  int regions_made_ = 0;
  std::string body_;
  std::vector<std::string> function_keys_;  // add_functions keys, in order
  std::string functions_;                   // their texts
};

}  // namespace torch_pjrt::hlo
