// A plugin cannot be unloaded while a live autograd graph holds one of its derivative formulas
// (Note [Graphs keep their plugin] in core/src/autograd/derivative.cpp): the unload is refused
// naming the nodes, and succeeds once the graph is gone. Before this, unloading freed the
// formula under the graph and backward() ran freed code.
#include <gtest/gtest.h>

#include "loom/autograd/autograd.h"
#include "loom/autograd/derivative.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::make_tensor;
using testing::message_of;

TEST(GraphLifetimeTest, UnloadIsRefusedWhileAGraphHoldsTheFormula) {
  // The packs alone: the oneDNN plugin would depend on ops_nn.
  PluginLoader::instance().load("ops_core");
  PluginLoader::instance().load("ops_nn");
  Tensor x = make_tensor({1, 2, 3}, {3});
  x.set_requires_grad(true);
  const Tensor target = make_tensor({0, 0, 0}, {3});
  Tensor loss = mse_loss(x, target);
  ASSERT_TRUE(loss.grad_fn());
  const std::string node = loss.grad_fn()->name();
  EXPECT_FALSE(autograd::live_graph_nodes_of("ops_nn").empty());

  std::string msg = message_of<PluginError>([] { PluginLoader::instance().unload("ops_nn"); });
  EXPECT_TRUE(contains(msg, "cannot unload plugin 'ops_nn'")) << msg;
  EXPECT_TRUE(contains(msg, "1 autograd node of live graphs (" + node + " x1)")) << msg;
  EXPECT_TRUE(PluginLoader::instance().is_loaded("ops_nn"));

  // The graph still works, and still holds the plugin after backward (loss keeps its node).
  loss.backward();
  testing::expect_close(x.grad(), {3}, {2.0 / 3, 4.0 / 3, 2.0});
  EXPECT_THROW(PluginLoader::instance().unload("ops_nn"), PluginError);

  loss = Tensor();
  EXPECT_TRUE(autograd::live_graph_nodes_of("ops_nn").empty());
  EXPECT_NO_THROW(PluginLoader::instance().unload("ops_nn"));
  EXPECT_FALSE(PluginLoader::instance().is_loaded("ops_nn"));
  PluginLoader::instance().load("ops_nn");
  x.set_grad(Tensor());
  mse_loss(x, target).backward();
  testing::expect_close(x.grad(), {3}, {2.0 / 3, 4.0 / 3, 2.0});
}

}  // namespace
}  // namespace loom
