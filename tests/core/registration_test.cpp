// Tests for core/src/registration.cpp: registration origins, the plugin attribution guard
// and RAII registration handles.

#include "loom/core/registration.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <thread>

namespace loom {
namespace {

// The repository root as this file was compiled, e.g. "/src/loom/".
std::string source_root() {
  const std::string_view self = __FILE__;
  const std::string_view tail = "tests/core/registration_test.cpp";
  EXPECT_TRUE(self.ends_with(tail)) << self;
  return std::string(self.substr(0, self.size() - tail.size()));
}

TEST(OriginTest, HereTrimsThePathToTheTopLevelFolder) {
  const int line = __LINE__ + 1;
  const Origin o = Origin::here();
  EXPECT_EQ(o.file, "tests/core/registration_test.cpp");
  EXPECT_EQ(o.line, line);
  EXPECT_EQ(o.plugin, "");
  EXPECT_EQ(o.str(),
            "static registration at tests/core/registration_test.cpp:" + std::to_string(line));
}

TEST(OriginTest, RelativePathKeepsTheWholePathInsideTheRepository) {
  const std::string root = source_root();
  // A top-level folder's name deeper in the path must not cut it short.
  EXPECT_EQ(Origin::relative_path(root + "ops/core/cpu/binary.cpp"), "ops/core/cpu/binary.cpp");
  EXPECT_EQ(Origin::relative_path(root + "plugins/cpu_onednn/tests/conv.cpp"),
            "plugins/cpu_onednn/tests/conv.cpp");
  EXPECT_EQ(Origin::relative_path(root + "core/src/tensor.cpp"), "core/src/tensor.cpp");
  EXPECT_EQ(Origin::relative_path(root + "dispatcher/src/library.cpp"),
            "dispatcher/src/library.cpp");
  EXPECT_EQ(Origin::relative_path(root + "tests/core/x.cpp"), "tests/core/x.cpp");
}

TEST(OriginTest, RelativePathOutsideTheRepository) {
  // Relative paths (as some build setups pass them) start at the first top-level folder.
  EXPECT_EQ(Origin::relative_path("../ops/core/cpu/binary.cpp"), "ops/core/cpu/binary.cpp");
  EXPECT_EQ(Origin::relative_path("ops/core/cpu/binary.cpp"), "ops/core/cpu/binary.cpp");
  // Out-of-tree plugins (built with the extension SDK) keep what they have.
  EXPECT_EQ(Origin::relative_path("/home/me/myplugin/src/kernel.cpp"),
            "/home/me/myplugin/src/kernel.cpp");
  EXPECT_EQ(Origin::relative_path("/elsewhere/loom/plugins/nn/linear.cpp"),
            "plugins/nn/linear.cpp");
  EXPECT_EQ(Origin::relative_path("/src/mytests/x.cpp"), "/src/mytests/x.cpp");  // not "tests/"
  EXPECT_EQ(Origin::relative_path("kernel.cpp"), "kernel.cpp");
  EXPECT_EQ(Origin::relative_path(""), "");
}

TEST(OriginTest, StrNamesThePlugin) {
  const Origin o{"nn", "plugins/nn/linear.cpp", 12};
  EXPECT_EQ(o.str(), "plugin 'nn' at plugins/nn/linear.cpp:12");
}

TEST(RegisteringPluginGuardTest, NestsAndRestores) {
  EXPECT_EQ(current_registering_plugin(), "");
  {
    RegisteringPluginGuard outer("outer");
    EXPECT_EQ(current_registering_plugin(), "outer");
    EXPECT_EQ(Origin::here().plugin, "outer");
    {
      RegisteringPluginGuard inner("inner");
      EXPECT_EQ(current_registering_plugin(), "inner");
      EXPECT_EQ(
          Origin::here().str().rfind("plugin 'inner' at tests/core/registration_test.cpp:", 0), 0u);
    }
    EXPECT_EQ(current_registering_plugin(), "outer");
  }
  EXPECT_EQ(current_registering_plugin(), "");
  EXPECT_EQ(Origin::here().plugin, "");
}

TEST(RegisteringPluginGuardTest, IsPerThread) {
  RegisteringPluginGuard guard("main_thread_plugin");
  std::string seen = "unset";
  std::thread([&] {
    seen = current_registering_plugin();
    RegisteringPluginGuard other("worker");
  }).join();
  EXPECT_EQ(seen, "");
  EXPECT_EQ(current_registering_plugin(), "main_thread_plugin");
}

TEST(RegistrationHandleTest, UndoRunsOnceOnDestructionOrReset) {
  int undone = 0;
  {
    RegistrationHandle h([&] { ++undone; });
    EXPECT_TRUE(static_cast<bool>(h));
  }
  EXPECT_EQ(undone, 1);
  RegistrationHandle h([&] { ++undone; });
  h.reset();
  EXPECT_FALSE(static_cast<bool>(h));
  h.reset();
  EXPECT_EQ(undone, 2);
  EXPECT_FALSE(static_cast<bool>(RegistrationHandle()));
}

TEST(RegistrationHandleTest, MovesTransferOwnership) {
  int a = 0, b = 0;
  RegistrationHandle h1([&] { ++a; });
  RegistrationHandle h2(std::move(h1));
  EXPECT_FALSE(static_cast<bool>(h1));  // NOLINT(bugprone-use-after-move): checking the state
  EXPECT_EQ(a, 0);
  RegistrationHandle h3([&] { ++b; });
  h3 = std::move(h2);  // drops h3's own registration first
  EXPECT_EQ(b, 1);
  EXPECT_EQ(a, 0);
  h3 = std::move(h3);  // self-move keeps it
  EXPECT_EQ(a, 0);
  h3.reset();
  EXPECT_EQ(a, 1);
}

}  // namespace
}  // namespace loom
