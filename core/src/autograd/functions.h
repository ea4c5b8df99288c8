// The engine's own nodes: AccumulateGrad (a leaf's sink), ViewNode (the grad_fn of a view
// regenerated after an in-place change) and CopySlices (an in-place op on a view, seen
// from its base), as in PyTorch's torch/csrc/autograd/functions.
#pragma once

#include "loom/autograd/meta.h"

namespace loom::autograd {

// Accumulates the gradient into a leaf's .grad after running the leaf's hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& variable);
  std::string name() const override { return "AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override;
  // The leaf is gone (Note [Strong grad accumulator]).
  void forget_variable() { variable_ = nullptr; }

 private:
  TensorImpl* variable_;  // not owned: the leaf owns this node
};

// Geometry of a tensor in storage terms.
struct Geometry {
  DimVector sizes, strides;
  int64_t offset = 0;
  static Geometry of(const Tensor& t) {
    return {DimVector(t.sizes().begin(), t.sizes().end()),
            DimVector(t.strides().begin(), t.strides().end()), t.storage_offset()};
  }
};

// Backward of "view = base.as_strided(...)": scatters the gradient into zeros shaped as base.
class ViewNode final : public Node {
 public:
  ViewNode(const Tensor& base, const Tensor& view);
  std::string name() const override { return "AsStridedBackward0"; }
  variable_list apply(variable_list&& grads) override;

 private:
  Geometry base_, view_;
  DType dtype_;
  Device device_;
};

// An in-place op fn on a view of base, recorded on base: the gradient of base is the
// incoming one with the view's region replaced by fn's gradient for its self.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn);
  std::string name() const override { return "CopySlices"; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override { fn_->release_variables(); }
  void take_references(NodeReferences& out) override {
    Node::take_references(out);
    if (fn_) out.nodes.push_back(std::move(fn_));
  }

 private:
  Geometry base_, view_;
  DType dtype_;
  Device device_;
  std::shared_ptr<Node> fn_;
};

// The gradient for an op that has no formula: fails in backward, naming the op.
class NotImplementedNode final : public Node {
 public:
  explicit NotImplementedNode(std::string op) : op_(std::move(op)) {}
  std::string name() const override { return "NotImplemented"; }
  variable_list apply(variable_list&& grads) override;

 private:
  std::string op_;
};

}  // namespace loom::autograd
