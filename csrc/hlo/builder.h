// Builds one StableHLO function @main as MLIR text (generic op syntax), value by value.
#pragma once

#include <cstdint>
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
enum class ReduceKind { Sum, Prod, Max, Min, And, Or };

// Every method validates its operands (types, ranks, dimension bounds) and throws
// std::invalid_argument naming the op and the problem: a malformed program is never handed to a
// plugin from here.
class Builder {
 public:
  // Adds an argument of @main; arguments are numbered in call order.
  Value parameter(const TensorType& type);

  // Rank-0 constants. Floats are spelled exactly (hex bit pattern); integers are truncated to the type;
  // bool takes 0/1.
  Value constant_float(double value, ElementType type);
  Value constant_int(int64_t value, ElementType type);
  // Constant of `type` with every element equal to `value` (a splat).
  Value splat(double value, const TensorType& type);

  Value iota(const TensorType& type, int64_t dimension);

  // Elementwise on operands of identical type. `op` is the StableHLO op name without the dialect,
  // e.g. "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder", "and",
  // "or", "xor", "atan2".
  Value binary(const char* op, Value lhs, Value rhs);
  // e.g. "negate", "abs", "exponential", "log", "sqrt", "rsqrt", "tanh", "logistic", "floor", "ceil",
  // "sine", "cosine", "not", "sign".
  Value unary(const char* op, Value operand);
  // Result has the same dims with element type bool. Uses the FLOAT/SIGNED/UNSIGNED comparison type
  // that matches the operand type.
  Value compare(Cmp direction, Value lhs, Value rhs);
  Value select(Value pred, Value on_true, Value on_false);
  Value convert(Value operand, ElementType to);
  Value bitcast_convert(Value operand, ElementType to);  // same bit width only

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

  Value dot_general(Value lhs, Value rhs, const std::vector<int64_t>& lhs_batch,
                    const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
                    const std::vector<int64_t>& rhs_contract);
  // Reduces `dims` of `operand` with the scalar (rank-0) `init` of the same element type.
  Value reduce(Value operand, Value init, const std::vector<int64_t>& dims, ReduceKind kind);

  // result[i...] = operand[indices[i...]] for a rank-1 operand and integer `indices` of any shape.
  Value gather_1d(Value operand, Value indices);
  // A copy of rank-1 `operand` with operand[indices[i...]] = updates[i...]; `updates` has the dims of
  // `indices`. Indices must be unique for a defined result.
  Value scatter_1d(Value operand, Value indices, Value updates);

  // The whole module: `module { func.func public @main(...) -> (...) { ... } }`.
  std::string emit(const std::vector<Value>& results) const;

  int num_parameters() const { return static_cast<int>(parameters_.size()); }

 private:
  Value add_op(const std::string& text_after_assign, const TensorType& result);
  std::vector<TensorType> parameters_;
  std::string body_;
  int next_id_ = 0;
};

}  // namespace torch_pjrt::hlo
