// Tests of dispatcher/src/plugin_loader.cpp and plugin.cpp against real plugin files
// (tests/plugins/test_plugins/): finding and loading them, refusing the broken ones
// with a reason and no side effects, files that are no plugin for this process (truncated,
// another machine's, a folder...), provider selection across plugins, a plugin that brings
// a device, and load/unload cycles. A file that crashed the loader would end this binary,
// which fails the suite.

#include "loom/dispatcher/plugin_loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "loom/core/allocator.h"
#include "loom/core/generator.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin.h"
#include "loom/dispatcher/plugin_abi.h"
#include "elf_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// ---- where the test plugins are ----

std::string test_plugin_dir() {
  if (const char* env = std::getenv("LOOM_TEST_PLUGIN_DIR"); env && *env) return env;
  return LOOM_TEST_PLUGIN_DIR_DEFAULT;
}

/// The file of test plugin `name`, as the loader reports it (canonical).
std::string plugin_file(const std::string& name) {
  const fs::path p = fs::path(test_plugin_dir()) / loom::str_cat("libloom_", name, ".so");
  std::error_code ec;
  const fs::path c = fs::canonical(p, ec);
  return ec ? p.string() : c.string();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

/// True while the file is mapped into this process (dlclose really closed it otherwise).
bool is_mapped(const std::string& file) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.ends_with(file)) return true;
  }
  return false;
}

/// Sets LOOM_PLUGIN_PATH for a scope.
class ScopedPluginPath {
 public:
  explicit ScopedPluginPath(const std::string& value) {
    if (const char* old = std::getenv("LOOM_PLUGIN_PATH")) previous_ = old;
    ::setenv("LOOM_PLUGIN_PATH", value.c_str(), 1);
  }
  ~ScopedPluginPath() {
    if (previous_) {
      ::setenv("LOOM_PLUGIN_PATH", previous_->c_str(), 1);
    } else {
      ::unsetenv("LOOM_PLUGIN_PATH");
    }
  }

 private:
  std::optional<std::string> previous_;
};

/// A fresh directory, removed with its contents at the end of the scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "loom_plugin_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  /// Copies test plugin `plugin` here under the file name of plugin `as`; returns the copy.
  std::string copy_plugin(const std::string& plugin, const std::string& as) const {
    const fs::path to = fs::path(path_) / loom::str_cat("libloom_", as, ".so");
    fs::copy_file(plugin_file(plugin), to, fs::copy_options::overwrite_existing);
    return fs::canonical(to).string();
  }

 private:
  std::string path_;
};

// ---- what is registered ----

/// Everything a plugin can register, one line per item: ops with their schema origin and
/// kernels (provider, priority, origin, whether active), fallbacks, loaded plugins, and
/// the allocator of every device type that has one.
std::vector<std::string> registry_state() {
  std::vector<std::string> out;
  Dispatcher& d = Dispatcher::instance();
  for (OperatorHandle op : d.ops()) {
    out.push_back(loom::str_cat("op ", op.schema().str()));
    for (const KernelInfo& k : d.kernels(op)) {
      out.push_back(loom::str_cat("  kernel ", dispatch_key_name(k.key), " provider '", k.provider,
                                  "' priority ", k.priority, " ", k.origin.str(),
                                  k.active ? " (active)" : ""));
    }
  }
  for (const KernelInfo& k : d.fallbacks()) {
    out.push_back(loom::str_cat("fallback ", dispatch_key_name(k.key), " ", k.origin.str()));
  }
  for (const PluginInfo& p : PluginLoader::instance().loaded()) {
    out.push_back(loom::str_cat("plugin ", p.name, " ", p.version, " from ", p.path));
  }
  for (DeviceType t : DeviceType::all()) {
    if (Allocator* a = find_allocator(t)) {
      out.push_back(loom::str_cat("allocator ", t.name(), " ", a->name()));
    }
  }
  return out;
}

std::vector<std::string> loaded_names() {
  std::vector<std::string> names;
  for (const PluginInfo& p : PluginLoader::instance().loaded()) names.push_back(p.name);
  return names;
}

// ---- calling the test ops ----

Tensor twice(const Tensor& x) {
  return Dispatcher::instance().find_op_or_throw("testns::twice").typed<Tensor(const Tensor&)>()(x);
}

/// How often good_dep's "fast" twice kernel has run.
int64_t fast_calls() {
  return Dispatcher::instance()
      .find_op_or_throw("testns::fast_calls")
      .typed<int64_t(const Tensor&)>()(Tensor::empty({1}));
}

std::vector<float> values(const Tensor& t) {
  const float* p = t.data_ptr<float>();
  return std::vector<float>(p, p + t.numel());
}

/// The provider of the active kernel of op at key ("" if none).
std::string active_provider(const std::string& op, DispatchKey key) {
  Dispatcher& d = Dispatcher::instance();
  for (const KernelInfo& k : d.kernels(d.find_op_or_throw(op))) {
    if (k.key == key && k.active) return k.provider;
  }
  return "";
}

/// Host memory for the "fake" device type once its plugin is gone.
class HostAllocator final : public Allocator {
 public:
  explicit HostAllocator(DeviceType type) : type_(type) {}
  using Allocator::allocate;
  DataPtr allocate(size_t nbytes, int16_t) override {
    counters_.on_alloc(static_cast<int64_t>(nbytes), false);
    return DataPtr(new char[nbytes > 0 ? nbytes : 1], this, &HostAllocator::release,
                   Device(type_, 0));
  }
  DeviceType device_type() const override { return type_; }
  std::string_view name() const override { return "test-host"; }
  AllocatorStats stats() const override { return counters_.snapshot(); }

 private:
  static void release(void* ctx, void* data) {
    delete[] static_cast<char*>(data);
    static_cast<HostAllocator*>(ctx)->counters_.on_free(0);
  }
  DeviceType type_;
  AllocatorCounters counters_;
};

// ---- the fixture ----

/// Each test starts from, and must leave behind, the same registry: whatever a test
/// loads is unloaded (newest first) when it ends, and the registry is compared.
class PluginLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    before_plugins_ = loaded_names();
    before_ = registry_state();
  }
  void TearDown() override {
    Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "");
    auto loaded = PluginLoader::instance().loaded();
    for (auto it = loaded.rbegin(); it != loaded.rend(); ++it) {
      if (std::find(before_plugins_.begin(), before_plugins_.end(), it->name) ==
          before_plugins_.end()) {
        PluginLoader::instance().unload(it->name);
      }
    }
    EXPECT_EQ(registry_state(), before_) << "the test left registrations behind";
  }

  /// Loads target and expects a PluginError whose message holds every piece of want; checks
  /// that the refusal left the registry as it was and (unless the test holds it open
  /// itself) the file closed.
  void expect_refused(const std::string& target, std::initializer_list<std::string> want,
                      bool expect_closed = true) {
    const std::vector<std::string> state = registry_state();
    try {
      PluginLoader::instance().load(target);
      ADD_FAILURE() << "loading '" << target << "' should have failed";
      return;
    } catch (const PluginError& e) {
      const std::string msg = e.what();
      for (const std::string& w : want)
        EXPECT_TRUE(contains(msg, w)) << "missing '" << w << "' in: " << msg;
    }
    EXPECT_EQ(registry_state(), state) << "the refused plugin left registrations behind";
    if (expect_closed && fs::exists(target)) {
      EXPECT_FALSE(is_mapped(fs::canonical(target).string())) << target << " is still open";
    }
  }

  std::vector<std::string> before_;
  std::vector<std::string> before_plugins_;
};

// ---- loading good plugins ----

TEST_F(PluginLoaderTest, LoadsByPathAndReportsItsManifest) {
  ScopedPluginPath none("");
  const PluginInfo info = PluginLoader::instance().load(plugin_file("good_ops"));
  EXPECT_EQ(info.name, "good_ops");
  EXPECT_EQ(info.version, "1.2.3");
  EXPECT_EQ(info.description, "test plugin: testns::twice on CPU");
  EXPECT_EQ(info.path, plugin_file("good_ops"));
  EXPECT_EQ(info.abi_major, unsigned{LOOM_PLUGIN_ABI_MAJOR});
  EXPECT_EQ(info.abi_minor, unsigned{LOOM_PLUGIN_ABI_MINOR});
  EXPECT_TRUE(contains(info.build_info, "Loom " LOOM_VERSION_STRING)) << info.build_info;
  EXPECT_TRUE(contains(info.build_info, "gcc")) << info.build_info;
  EXPECT_TRUE(info.dependencies.empty());
  EXPECT_EQ(
      info.registrations,
      (std::vector<std::string>{"def testns::twice(Tensor x) -> Tensor",
                                "impl testns::twice for CPU (provider 'good_ops', priority 0)"}));
  EXPECT_TRUE(PluginLoader::instance().is_loaded("good_ops"));
  EXPECT_EQ(loaded_names().back(), "good_ops");

  EXPECT_EQ(values(twice(Tensor::from_vector<float>({1, 2, 3}, std::vector<int64_t>{3}))),
            (std::vector<float>{2, 4, 6}));
  // Every registration remembers its plugin and source line (Note [Registration origin]).
  Dispatcher& d = Dispatcher::instance();
  const auto kernels = d.kernels(d.find_op_or_throw("testns::twice"));
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].key, DispatchKey::CPU);
  EXPECT_EQ(kernels[0].provider, "good_ops");
  EXPECT_EQ(kernels[0].origin.plugin, "good_ops");
  EXPECT_TRUE(contains(kernels[0].origin.file, "test_plugins/good_ops.cpp"))
      << kernels[0].origin.file;

  PluginLoader::instance().unload("good_ops");
  EXPECT_FALSE(PluginLoader::instance().is_loaded("good_ops"));
  EXPECT_FALSE(d.find_op("testns::twice"));
  EXPECT_TRUE(is_mapped(plugin_file("good_ops")))
      << "unload keeps the code mapped: Note [Unload keeps code mapped]";
}

TEST_F(PluginLoaderTest, LoadsByNameThroughPluginPath) {
  ScopedPluginPath path(loom::str_cat("/no/such/dir:", test_plugin_dir()));
  EXPECT_EQ(PluginLoader::instance().search_path(),
            (std::vector<std::string>{"/no/such/dir", test_plugin_dir(),
                                      PluginLoader::default_plugin_dir()}));
  const PluginInfo info = PluginLoader::instance().load("good_ops");
  EXPECT_EQ(info.name, "good_ops");
  EXPECT_EQ(info.path, plugin_file("good_ops"));
}

TEST_F(PluginLoaderTest, SearchPathEndsWithTheInstallFolder) {
  ScopedPluginPath none("");
  const auto dirs = PluginLoader::instance().search_path();
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], PluginLoader::default_plugin_dir());
  EXPECT_TRUE(dirs[0].ends_with("/loom/plugins")) << dirs[0];
  // The test plugins are not in the install folder, so a search without the path fails.
  expect_refused("good_ops", {"cannot find plugin 'good_ops'", "no libloom_good_ops.so",
                              PluginLoader::default_plugin_dir(), "LOOM_PLUGIN_PATH"});
}

TEST_F(PluginLoaderTest, EarlierFolderOfThePathWins) {
  // A look-alike good_ops (duplicate_name's file, manifest "good_ops" version
  // 9.9.9-duplicate) in a folder before the real one shadows it, and vice versa.
  TempDir shadow;
  const std::string lookalike = shadow.copy_plugin("duplicate_name", "good_ops");
  {
    ScopedPluginPath path(loom::str_cat(shadow.path(), ":", test_plugin_dir()));
    const PluginInfo info = PluginLoader::instance().load("good_ops");
    EXPECT_EQ(info.version, "9.9.9-duplicate");
    EXPECT_EQ(info.path, lookalike);
    PluginLoader::instance().unload("good_ops");
  }
  {
    ScopedPluginPath path(loom::str_cat(test_plugin_dir(), ":", shadow.path()));
    const PluginInfo info = PluginLoader::instance().load("good_ops");
    EXPECT_EQ(info.version, "1.2.3");
    EXPECT_EQ(info.path, plugin_file("good_ops"));
  }
}

TEST_F(PluginLoaderTest, LoadingTwiceReturnsTheSameInfo) {
  ScopedPluginPath path(test_plugin_dir());
  PluginLoader& loader = PluginLoader::instance();
  const PluginInfo first = loader.load(plugin_file("good_ops"));
  const auto state = registry_state();
  const std::string dir = test_plugin_dir();
  for (const std::string& again :
       {plugin_file("good_ops"), std::string("good_ops"),
        loom::str_cat(dir, "/./libloom_good_ops.so"),
        loom::str_cat(dir, "/../", fs::path(dir).filename().string(), "/libloom_good_ops.so")}) {
    SCOPED_TRACE(again);
    const PluginInfo info = loader.load(again);
    EXPECT_EQ(info.name, first.name);
    EXPECT_EQ(info.path, first.path);
    EXPECT_EQ(info.version, first.version);
    EXPECT_EQ(info.registrations, first.registrations);
    EXPECT_EQ(registry_state(), state);
  }
  // One unload undoes it; the file stays mapped (Note [Unload keeps code mapped]).
  loader.unload("good_ops");
  EXPECT_TRUE(is_mapped(plugin_file("good_ops")))
      << "unload keeps the code mapped: Note [Unload keeps code mapped]";
}

TEST_F(PluginLoaderTest, DependencyIsLoadedFromTheSearchPath) {
  ScopedPluginPath path(test_plugin_dir());
  const PluginInfo info = PluginLoader::instance().load(plugin_file("good_dep"));
  EXPECT_EQ(info.dependencies, (std::vector<std::string>{"good_ops"}));
  const auto names = loaded_names();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[names.size() - 2], "good_ops");
  EXPECT_EQ(names.back(), "good_dep");
  EXPECT_EQ(
      info.registrations,
      (std::vector<std::string>{"def testns::fast_calls(Tensor like) -> int",
                                "impl testns::twice for CPU (provider 'fast', priority 10)",
                                "impl testns::fast_calls for CPU (provider 'fast', priority 10)"}));
}

TEST_F(PluginLoaderTest, UnloadIsRefusedWhileAnotherPluginDependsOnIt) {
  ScopedPluginPath path(test_plugin_dir());
  PluginLoader::instance().load("good_dep");
  const auto state = registry_state();
  try {
    PluginLoader::instance().unload("good_ops");
    FAIL() << "unloading good_ops under good_dep should fail";
  } catch (const PluginError& e) {
    EXPECT_STREQ(e.what(),
                 "cannot unload plugin 'good_ops': plugin 'good_dep' depends on it; unload "
                 "'good_dep' first");
  }
  EXPECT_EQ(registry_state(), state);
  EXPECT_EQ(values(twice(Tensor::from_vector<float>({3}, std::vector<int64_t>{1}))),
            (std::vector<float>{6}));
  PluginLoader::instance().unload("good_dep");
  PluginLoader::instance().unload("good_ops");
}

TEST_F(PluginLoaderTest, UnloadingAPluginThatIsNotLoadedFails) {
  try {
    PluginLoader::instance().unload("good_ops");
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_STREQ(e.what(), "cannot unload plugin 'good_ops': it is not loaded");
  }
}

TEST_F(PluginLoaderTest, LoadAllLoadsTheGoodAndReportsTheBad) {
  TempDir dir;
  dir.copy_plugin("good_ops", "good_ops");
  dir.copy_plugin("good_dep", "good_dep");
  const std::string not_a_plugin = dir.copy_plugin("not_a_plugin", "not_a_plugin");
  const std::string garbage = dir.copy_plugin("garbage", "garbage");
  const std::string abi = dir.copy_plugin("abi_mismatch", "abi_mismatch");
  ScopedPluginPath path(dir.path());
  std::vector<PluginFailure> failures;
  for (const PluginFailure& f : PluginLoader::instance().load_all()) {
    // Plugins of the install folder may load (or fail) too; look only at ours.
    if (fs::path(f.path).parent_path() == fs::path(dir.path())) failures.push_back(f);
  }
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_EQ(fs::canonical(failures[0].path), abi);
  EXPECT_TRUE(contains(failures[0].message, "(plugin: 99.0, current: 1.0)")) << failures[0].message;
  EXPECT_EQ(fs::canonical(failures[1].path), garbage);
  EXPECT_EQ(fs::canonical(failures[2].path), not_a_plugin);
  EXPECT_TRUE(contains(failures[2].message, "is not a Loom plugin")) << failures[2].message;
  EXPECT_TRUE(PluginLoader::instance().is_loaded("good_ops"));
  EXPECT_TRUE(PluginLoader::instance().is_loaded("good_dep"));
  EXPECT_EQ(active_provider("testns::twice", DispatchKey::CPU), "fast");
}

TEST_F(PluginLoaderTest, LoadsAPluginWrittenInC) {
  const PluginInfo info = PluginLoader::instance().load(plugin_file("c_plugin"));
  EXPECT_EQ(info.name, "c_plugin");
  EXPECT_EQ(info.build_info, "hand-written C manifest");
  EXPECT_TRUE(info.registrations.empty());
  PluginLoader::instance().unload("c_plugin");
  EXPECT_TRUE(is_mapped(plugin_file("c_plugin")))
      << "unload keeps the code mapped: Note [Unload keeps code mapped]";
}

TEST_F(PluginLoaderTest, RefusesAFileOpenedOutsideTheLoader) {
  // Its initialisers ran without the loader around them, so the loader cannot know
  // what it registered (Note [Resident plugin files]). A fresh copy of c_plugin is a file
  // this process has never loaded (other tests may have parked the original).
  const fs::path dir = fs::temp_directory_path() / loom::str_cat("loom_outside_", ::getpid());
  fs::create_directories(dir);
  const std::string f = (dir / "libloom_c_plugin.so").string();
  fs::copy_file(plugin_file("c_plugin"), f, fs::copy_options::overwrite_existing);
  void* handle = ::dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  expect_refused(f,
                 {"plugin 'c_plugin' (" + f + ")",
                  "already in the process without having been loaded as a plugin"},
                 /*expect_closed=*/false);
  ::dlclose(handle);
  EXPECT_EQ(PluginLoader::instance().load(f).name, "c_plugin");
  PluginLoader::instance().unload("c_plugin");
  fs::remove_all(dir);
}

// ---- refusing broken plugins ----

TEST_F(PluginLoaderTest, RefusesAMissingFile) {
  const std::string missing = loom::str_cat(test_plugin_dir(), "/libloom_nothing_here.so");
  expect_refused(missing, {"cannot load plugin '", missing, "no such file"});
}

TEST_F(PluginLoaderTest, RefusesALibraryWithoutTheEntryPoint) {
  const std::string f = plugin_file("not_a_plugin");
  expect_refused(f, {"'" + f + "' is not a Loom plugin", "does not export the entry point",
                     LOOM_PLUGIN_ENTRY_POINT});
}

TEST_F(PluginLoaderTest, RefusesAFileThatIsNotASharedLibrary) {
  const std::string f = plugin_file("garbage");
  expect_refused(f, {"cannot load plugin file '" + f + "'", "ELF"});
}

// ---- files that are no plugin for this process ----
// Note [Checking a plugin file before dlopen]: each is refused, with the file and the
// reason, before dlopen sees it.

/// The bytes of test plugin `name`'s file.
std::string plugin_bytes(const std::string& name) {
  std::ifstream in(plugin_file(name), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes bytes to the file `name` in dir; returns its canonical path.
std::string write_file(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const fs::path path = fs::path(dir.path()) / name;
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return fs::canonical(path).string();
}

/// elf with its ELF header changed by edit.
template <typename Edit>
std::string with_header(std::string elf, Edit edit) {
  Elf64_Ehdr h;
  std::memcpy(&h, elf.data(), sizeof(h));
  edit(h);
  std::memcpy(elf.data(), &h, sizeof(h));
  return elf;
}

using loom::testing::end_of_loaded_bytes;

// A machine that is not this one, for a library built for it.
#if defined(__aarch64__)
constexpr uint16_t kOtherMachine = EM_X86_64;
constexpr const char* kOtherMachineName = "x86-64 (e_machine 62)";
#else
constexpr uint16_t kOtherMachine = EM_AARCH64;
constexpr const char* kOtherMachineName = "AArch64 (e_machine 183)";
#endif

TEST_F(PluginLoaderTest, RefusesATruncatedCopyBeforeDlopenCanCrashOnIt) {
  // dlopen maps a truncated file's segments and dies of SIGBUS touching the missing pages.
  ScopedPluginPath path(test_plugin_dir());
  PluginLoader::instance().load("good_ops");
  const std::string whole = plugin_bytes("good_ops");
  ASSERT_GT(whole.size(), 4096u);
  TempDir dir;
  struct Cut {
    const char* name;
    size_t size;
    std::string reason;
  };
  // Half the file (in a build with debug information, that may cut only sections the linker
  // never maps) and half the bytes of its segments (which dlopen maps: SIGBUS).
  const uint64_t loaded = end_of_loaded_bytes(whole);
  for (const Cut& cut :
       {Cut{"half", whole.size() / 2, "it is truncated: "},
        Cut{"segments_half", loaded / 2, "it is truncated: segment "},
        Cut{"after_header", sizeof(Elf64_Ehdr),
            "it is truncated: the program header table takes bytes 64 to "},
        Cut{"in_header", 40, "it is truncated: the ELF header takes bytes 0 to 64"},
        Cut{"magic_only", 4, "it is truncated: the ELF identification"}}) {
    SCOPED_TRACE(cut.name);
    const std::string f =
        write_file(dir, loom::str_cat("libloom_cut_", cut.name, ".so"), whole.substr(0, cut.size));
    expect_refused(f, {"cannot load plugin file '" + f + "': ", cut.reason});
  }
  // Without section headers (as a stripped copy has none) the segments themselves are what is
  // checked: one byte missing from the last PT_LOAD segment is refused.
  const std::string stripped = with_header(whole, [](Elf64_Ehdr& h) {
    h.e_shoff = 0;
    h.e_shnum = 0;
    h.e_shstrndx = 0;
  });
  const uint64_t end = loaded;
  ASSERT_GT(end, 0u);
  const std::string f = write_file(dir, "libloom_cut_stripped.so", stripped.substr(0, end - 1));
  expect_refused(f, {"cannot load plugin file '" + f + "': it is truncated: segment ",
                     "(PT_LOAD) takes bytes ",
                     loom::str_cat(" to ", end, ", but the file has only ", end - 1,
                                   " (loading it would kill "
                                   "the process with SIGBUS)")});
  // None of it disturbed what was loaded.
  EXPECT_EQ(values(twice(Tensor::from_vector<float>({2}, std::vector<int64_t>{1}))),
            (std::vector<float>{4}));
}

TEST_F(PluginLoaderTest, RefusesALibraryForAnotherMachineAndSaysWhichOne) {
  const std::string whole = plugin_bytes("good_ops");
  TempDir dir;
  const std::string machine =
      write_file(dir, "libloom_machine.so",
                 with_header(whole, [](Elf64_Ehdr& h) { h.e_machine = kOtherMachine; }));
  expect_refused(machine, {"cannot load plugin file '" + machine + "': it is built for " +
                           kOtherMachineName + ", and this process runs on "});
#if defined(__x86_64__)
  expect_refused(machine, {"and this process runs on x86-64 (e_machine 62)"});
#endif
  const std::string bits32 =
      write_file(dir, "libloom_bits32.so",
                 with_header(whole, [](Elf64_Ehdr& h) { h.e_ident[EI_CLASS] = ELFCLASS32; }));
  expect_refused(bits32, {bits32 + "': it is a 32-bit library, and this process is 64-bit"});
  const std::string swapped = write_file(
      dir, "libloom_swapped.so", with_header(whole, [](Elf64_Ehdr& h) {
        h.e_ident[EI_DATA] = h.e_ident[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
      }));
  expect_refused(swapped, {swapped + "': it is a ", "-endian library, and this process is "});
}

TEST_F(PluginLoaderTest, ASearchPassesOverAnotherMachinesLibraryOfThatName) {
  // A plugin folder shared by two kinds of machine: the other machine's good_ops comes
  // first in the path, and this machine's is found after it.
  TempDir shared;
  write_file(
      shared, "libloom_good_ops.so",
      with_header(plugin_bytes("good_ops"), [](Elf64_Ehdr& h) { h.e_machine = kOtherMachine; }));
  const std::string passed = (fs::path(shared.path()) / "libloom_good_ops.so").string();
  {
    ScopedPluginPath path(loom::str_cat(shared.path(), ":", test_plugin_dir()));
    EXPECT_EQ(PluginLoader::instance().load("good_ops").path, plugin_file("good_ops"));
    PluginLoader::instance().unload("good_ops");
  }
  ScopedPluginPath path(shared.path());
  expect_refused("good_ops",
                 {"cannot find plugin 'good_ops': no libloom_good_ops.so in the "
                  "plugin search path",
                  "; passed over '" + passed + "': it is built for " + kOtherMachineName});
}

TEST_F(PluginLoaderTest, NamesWhatIsWrongWithAFileThatIsNoLibrary) {
  TempDir dir;
  const fs::path folder = fs::path(dir.path()) / "libloom_folder.so";
  fs::create_directory(folder);
  expect_refused(folder.string(), {"cannot load plugin file '" + fs::canonical(folder).string() +
                                   "': it is a directory, not a plugin file"});

  const fs::path dangling = fs::path(dir.path()) / "libloom_dangling.so";
  fs::create_symlink(fs::path(dir.path()) / "gone.so", dangling);
  expect_refused(dangling.string(), {"cannot load plugin file '" + dangling.string() +
                                     "': it is a symbolic link to '" + dir.path() +
                                     "/gone.so', which does not exist"});

  const std::string empty = write_file(dir, "libloom_empty.so", "");
  expect_refused(empty, {"cannot load plugin file '" + empty + "': it is empty (0 bytes)"});

  const std::string text = write_file(dir, "libloom_text.so", "not a library, just text\n");
  expect_refused(
      text, {"cannot load plugin file '" + text + "': it is not a shared library (no ELF header)"});

  const fs::path fifo = fs::path(dir.path()) / "libloom_fifo.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(fifo.string(), {"cannot load plugin file '" + fs::canonical(fifo).string() +
                                 "': it is a FIFO, not a plugin file"});

  const std::string executable =
      write_file(dir, "libloom_executable.so",
                 with_header(plugin_bytes("good_ops"), [](Elf64_Ehdr& h) { h.e_type = ET_EXEC; }));
  expect_refused(executable, {executable + "': it is an executable, not a shared library"});
}

TEST_F(PluginLoaderTest, NamesAFileItCannotRead) {
  TempDir dir;
  const std::string f = write_file(dir, "libloom_locked.so", plugin_bytes("good_ops"));
  fs::permissions(f, fs::perms::none);
  if (::access(f.c_str(), R_OK) == 0) {
    GTEST_SKIP() << "this process may read any file (root?): permissions cannot lock one";
  }
  expect_refused(f, {"cannot load plugin file '" + f + "': it cannot be read: Permission denied"});
}

TEST_F(PluginLoaderTest, LoadAllNamesEveryFileItRefusesOrSkipsAndLoadsTheRest) {
  TempDir first, second;
  const fs::path a = first.path(), b = second.path();
  const std::string good_ops = first.copy_plugin("good_ops", "good_ops");
  first.copy_plugin("good_dep", "good_dep");
  const std::string whole = plugin_bytes("good_ops");
  const std::string cut =
      write_file(first, "libloom_cut.so", whole.substr(0, end_of_loaded_bytes(whole) / 2));
  const std::string empty = write_file(first, "libloom_empty.so", "");
  const std::string text = write_file(first, "libloom_text.so", "text\n");
  const std::string machine =
      write_file(first, "libloom_machine.so",
                 with_header(whole, [](Elf64_Ehdr& h) { h.e_machine = kOtherMachine; }));
  write_file(first, "README.md", "# plugins\n");
  write_file(first, "libloom_versioned.so.1", whole);
  fs::create_directory(a / "libloom_folder.so");
  fs::create_directory(a / "sub");
  fs::create_symlink(a / "gone.so", a / "libloom_dangling.so");
  ASSERT_EQ(::mkfifo((a / "libloom_fifo.so").c_str(), 0600), 0);
  second.copy_plugin("good_ops", "good_ops");  // shadowed by the first folder's

  ScopedPluginPath path(loom::str_cat(first.path(), ":", second.path()));
  std::vector<PluginFailure> skipped_all;
  std::map<std::string, std::string> failed, skipped;  // file name (folder 2: "2/" + name) -> why
  auto ours = [&](const std::string& p, std::map<std::string, std::string>& into,
                  const std::string& why) {
    const fs::path parent = fs::path(p).parent_path();
    const std::string name = fs::path(p).filename().string();
    if (parent == a) into[name] = why;
    if (parent == b) into["2/" + name] = why;
  };
  for (const PluginFailure& f : PluginLoader::instance().load_all(&skipped_all)) {
    ours(f.path, failed, f.message);
  }
  for (const PluginFailure& f : skipped_all) ours(f.path, skipped, f.message);

  EXPECT_TRUE(PluginLoader::instance().is_loaded("good_ops"));
  EXPECT_TRUE(PluginLoader::instance().is_loaded("good_dep"));
  EXPECT_EQ(PluginLoader::instance().load("good_ops").path, good_ops);
  EXPECT_EQ(active_provider("testns::twice", DispatchKey::CPU), "fast");

  auto keys = [](const std::map<std::string, std::string>& m) {
    std::vector<std::string> k;
    for (const auto& [name, _] : m) k.push_back(name);
    return k;
  };
  EXPECT_EQ(keys(failed), (std::vector<std::string>{"libloom_cut.so", "libloom_dangling.so",
                                                    "libloom_empty.so", "libloom_text.so"}));
  EXPECT_TRUE(
      contains(failed["libloom_cut.so"], "cannot load plugin file '" + cut + "': it is truncated"))
      << failed["libloom_cut.so"];
  EXPECT_TRUE(contains(failed["libloom_dangling.so"], "which does not exist"))
      << failed["libloom_dangling.so"];
  EXPECT_TRUE(contains(failed["libloom_empty.so"], empty + "': it is empty"))
      << failed["libloom_empty.so"];
  EXPECT_TRUE(contains(failed["libloom_text.so"], text + "': it is not a shared library"))
      << failed["libloom_text.so"];

  EXPECT_EQ(keys(skipped),
            (std::vector<std::string>{"2/libloom_good_ops.so", "README.md", "libloom_fifo.so",
                                      "libloom_folder.so", "libloom_machine.so",
                                      "libloom_versioned.so.1", "sub"}));
  EXPECT_EQ(skipped["2/libloom_good_ops.so"], "plugin 'good_ops' is taken from '" +
                                                  (a / "libloom_good_ops.so").string() +
                                                  "', earlier in the search path");
  EXPECT_EQ(skipped["README.md"], "not a plugin file name (plugins are named libloom_<name>.so)");
  EXPECT_EQ(skipped["libloom_versioned.so.1"], skipped["README.md"]);
  EXPECT_EQ(skipped["libloom_fifo.so"], "it is a FIFO, not a plugin file");
  EXPECT_EQ(skipped["libloom_folder.so"], "it is a directory, not a plugin file");
  EXPECT_EQ(skipped["sub"], "a folder: plugin folders are not searched into");
  EXPECT_TRUE(
      contains(skipped["libloom_machine.so"], loom::str_cat("it is built for ", kOtherMachineName)))
      << skipped["libloom_machine.so"];
  (void)machine;
}

// ---- plugin code that throws what is not a std::exception ----

TEST(PluginRegistration, AHookThrowingANonStandardExceptionIsReported) {
  PluginContext ctx("int_thrower");
  ctx.pending_on_load.push_back(+[](PluginContext&) { throw 42; });
  char error[256] = {};
  EXPECT_EQ(detail::run_plugin_registration(reinterpret_cast<LoomPluginContext*>(&ctx), error,
                                            sizeof(error)),
            1);
  EXPECT_STREQ(error,
               "a LOOM_PLUGIN_ON_LOAD hook threw a non-standard exception (not derived from "
               "std::exception)");
}

TEST(PluginRegistration, ABlockThrowingANonStandardExceptionIsNamedAndRolledBack) {
  PluginContext ctx("int_thrower");
  ctx.pending_blocks.push_back(detail::LibraryBlock{Library::Kind::Def, "intthrowns", nullptr,
                                                    +[](Library& m) {
                                                      m.def("never(Tensor x) -> Tensor");
                                                      throw 42;
                                                    },
                                                    "int_thrower.cpp", 7});
  char error[256] = {};
  EXPECT_EQ(detail::run_plugin_registration(reinterpret_cast<LoomPluginContext*>(&ctx), error,
                                            sizeof(error)),
            1);
  EXPECT_STREQ(error,
               "in the block at int_thrower.cpp:7: it threw a non-standard exception (not derived "
               "from std::exception)");
  EXPECT_FALSE(Dispatcher::instance().find_op("intthrowns::never"));
}

TEST_F(PluginLoaderTest, RefusesAnotherMajorAbiAndPrintsBothVersions) {
  const std::string f = plugin_file("abi_mismatch");
  expect_refused(f, {f, "incompatible plugin ABI version (plugin: 99.0, current: 1.0)"});
}

TEST_F(PluginLoaderTest, RefusesANewerMinorAbi) {
  const std::string f = plugin_file("abi_minor_newer");
  expect_refused(f, {f, "incompatible plugin ABI version (plugin: 1.1, current: 1.0)"});
}

TEST_F(PluginLoaderTest, RefusesAnEntryPointWithoutManifest) {
  const std::string f = plugin_file("null_manifest");
  expect_refused(f, {f, "its entry point returned no manifest"});
}

TEST_F(PluginLoaderTest, RefusesAnInvalidManifestName) {
  const std::string f = plugin_file("bad_name");
  expect_refused(f, {f, "invalid plugin name 'bad name with spaces'"});
  EXPECT_FALSE(Dispatcher::instance().find_op("badnamens::never"));
}

TEST_F(PluginLoaderTest, RefusesAMissingDependency) {
  ScopedPluginPath path(test_plugin_dir());
  const std::string f = plugin_file("missing_dep");
  expect_refused(f, {"plugin 'missing_dep' (" + f + ") requires plugin 'no_such_plugin'",
                     "cannot find plugin 'no_such_plugin'"});
  EXPECT_FALSE(Dispatcher::instance().find_op("missingns::orphan"));
}

TEST_F(PluginLoaderTest, RefusesADependencyGivenAsAPath) {
  const std::string f = plugin_file("path_dep");
  expect_refused(f, {"plugin 'path_dep' (" + f + "): invalid dependency 'libloom_good_ops.so'"});
  EXPECT_FALSE(PluginLoader::instance().is_loaded("good_ops"));
}

TEST_F(PluginLoaderTest, RefusesAFoundFileThatHoldsAnotherPlugin) {
  // libloom_no_such_plugin.so exists here, but it is good_ops under another file name.
  TempDir dir;
  const std::string impostor = dir.copy_plugin("good_ops", "no_such_plugin");
  ScopedPluginPath path(dir.path());
  const std::string f = plugin_file("missing_dep");
  expect_refused(f, {"plugin 'missing_dep' (" + f + ") requires plugin 'no_such_plugin'",
                     "cannot load plugin 'no_such_plugin': the file found for it, '" + impostor +
                         "', is plugin 'good_ops'"});
  EXPECT_FALSE(PluginLoader::instance().is_loaded("good_ops"));
  // The same for a search by hand, also when that file is loaded already.
  expect_refused("no_such_plugin",
                 {"the file found for it, '" + impostor + "', is plugin 'good_ops'"});
  PluginLoader::instance().load(impostor);
  expect_refused("no_such_plugin",
                 {"the file found for it, '" + impostor + "', is plugin 'good_ops'"},
                 /*expect_closed=*/false);
}

TEST_F(PluginLoaderTest, DependencyIsFoundNextToThePluginThatNeedsIt) {
  ScopedPluginPath none("");
  const PluginInfo info = PluginLoader::instance().load(plugin_file("good_dep"));
  EXPECT_EQ(info.name, "good_dep");
  EXPECT_TRUE(PluginLoader::instance().is_loaded("good_ops"));
}

TEST_F(PluginLoaderTest, RefusesADependencyOutsideTheSearchPath) {
  ScopedPluginPath none("");
  // good_dep alone in a folder: its dependency is neither next to it nor on the path.
  const fs::path dir = fs::temp_directory_path() / loom::str_cat("loom_lonely_", ::getpid());
  fs::create_directories(dir);
  const std::string f = (dir / "libloom_good_dep.so").string();
  fs::copy_file(plugin_file("good_dep"), f, fs::copy_options::overwrite_existing);
  expect_refused(f, {"plugin 'good_dep' (" + f + ") requires plugin 'good_ops'",
                     "no libloom_good_ops.so in the plugin search path"});
  EXPECT_FALSE(Dispatcher::instance().find_op("testns::fast_calls"));
  fs::remove_all(dir);
}

TEST_F(PluginLoaderTest, DependenciesLoadedForAFailedPluginAreUnloadedAgain) {
  ScopedPluginPath path(test_plugin_dir());
  const std::string f = plugin_file("second_dep_missing");
  expect_refused(f, {"plugin 'second_dep_missing' (" + f + ") requires plugin 'no_such_plugin'"});
  EXPECT_FALSE(PluginLoader::instance().is_loaded("good_ops"));
  EXPECT_FALSE(Dispatcher::instance().find_op("testns::twice"));
  EXPECT_TRUE(is_mapped(plugin_file("good_ops")))
      << "unload keeps the code mapped: Note [Unload keeps code mapped]";

  // A dependency that was loaded before stays loaded.
  PluginLoader::instance().load("good_ops");
  expect_refused(f, {"requires plugin 'no_such_plugin'"});
  EXPECT_TRUE(PluginLoader::instance().is_loaded("good_ops"));
}

TEST_F(PluginLoaderTest, RefusesAConflictingDefinitionAndRollsBackTheRest) {
  ScopedPluginPath path(test_plugin_dir());
  PluginLoader::instance().load("good_ops");
  const std::string f = plugin_file("conflict");
  expect_refused(f, {"plugin 'conflict' (" + f + ") failed to register",
                     "everything it registered was rolled back", "conflict.cpp",
                     "def(testns::twice): the operator is already defined by plugin 'good_ops'"});
  EXPECT_FALSE(Dispatcher::instance().find_op("conflictns::innocent"));
  // good_ops' definition and kernel are untouched.
  EXPECT_EQ(values(twice(Tensor::from_vector<float>({5}, std::vector<int64_t>{1}))),
            (std::vector<float>{10}));
}

TEST_F(PluginLoaderTest, RollsBackAPluginThatThrows) {
  const std::string f = plugin_file("throws");
  expect_refused(f, {"plugin 'throws' (" + f + ") failed to register", "throws.cpp",
                     "deliberate failure in block 3"});
  EXPECT_FALSE(Dispatcher::instance().find_op("throwns::first"));
  EXPECT_FALSE(Dispatcher::instance().find_op("throwns::second"));
  // Refused plugins can be retried: the same failure, the same clean state.
  expect_refused(f, {"deliberate failure in block 3"});
}

TEST_F(PluginLoaderTest, RefusesAKernelWhoseSignatureDoesNotFitItsSchema) {
  const std::string f = plugin_file("sig_mismatch");
  expect_refused(
      f, {"plugin 'sig_mismatch' (" + f + ") failed to register", "sig_mismatch.cpp",
          "impl(signs::repeat, CPU)", "does not match the schema", "'times' is int in the schema"});
  EXPECT_FALSE(Dispatcher::instance().find_op("signs::repeat"));
}

TEST_F(PluginLoaderTest, RefusesASecondPluginOfTheSameName) {
  ScopedPluginPath path(test_plugin_dir());
  PluginLoader::instance().load("good_ops");
  const std::string f = plugin_file("duplicate_name");
  expect_refused(f, {"plugin '" + f + "'", "a plugin named 'good_ops' is already loaded from '" +
                                               plugin_file("good_ops") + "'"});
  EXPECT_FALSE(Dispatcher::instance().find_op("dupns::marker"));
  EXPECT_EQ(PluginLoader::instance().loaded().back().version, "1.2.3");
}

// ---- providers across plugins ----

TEST_F(PluginLoaderTest, ProviderSelectionAcrossPlugins) {
  ScopedPluginPath path(test_plugin_dir());
  PluginLoader::instance().load("good_dep");
  Dispatcher& d = Dispatcher::instance();
  const Tensor x = Tensor::from_vector<float>({1, -2}, std::vector<int64_t>{2});
  const auto twice_op = d.find_op_or_throw("testns::twice").typed<Tensor(const Tensor&)>();

  // Priority: good_dep's "fast" (10) beats good_ops' kernel (0).
  EXPECT_EQ(active_provider("testns::twice", DispatchKey::CPU), "fast");
  int64_t calls = fast_calls();
  EXPECT_EQ(values(twice_op(x)), (std::vector<float>{2, -4}));
  EXPECT_EQ(fast_calls(), ++calls);

  // A preferred provider beats priority.
  d.set_preferred_provider(DispatchKey::CPU, "good_ops");
  EXPECT_EQ(active_provider("testns::twice", DispatchKey::CPU), "good_ops");
  EXPECT_EQ(values(twice_op(x)), (std::vector<float>{2, -4}));
  EXPECT_EQ(fast_calls(), calls);
  d.set_preferred_provider(DispatchKey::CPU, "");
  twice_op(x);
  EXPECT_EQ(fast_calls(), ++calls);

  // A per-op override beats both.
  d.set_preferred_provider(DispatchKey::CPU, "fast");
  d.set_provider_override("testns::twice", DispatchKey::CPU, "good_ops");
  EXPECT_EQ(active_provider("testns::twice", DispatchKey::CPU), "good_ops");
  twice_op(x);
  EXPECT_EQ(fast_calls(), calls);
  d.set_provider_override("testns::twice", DispatchKey::CPU, "");
  twice_op(x);
  EXPECT_EQ(fast_calls(), ++calls);

  // Unloading good_dep falls back to good_ops' kernel; handles taken before keep working,
  // even with the departed provider still preferred.
  PluginLoader::instance().unload("good_dep");
  EXPECT_FALSE(d.find_op("testns::fast_calls"));
  EXPECT_EQ(active_provider("testns::twice", DispatchKey::CPU), "good_ops");
  EXPECT_EQ(values(twice_op(x)), (std::vector<float>{2, -4}));
  const auto kernels = d.kernels(d.find_op_or_throw("testns::twice"));
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].provider, "good_ops");
  EXPECT_TRUE(is_mapped(plugin_file("good_dep")))
      << "unload keeps the code mapped: Note [Unload keeps code mapped]";

  // Loading it again brings the fast provider back (the preference still names it).
  PluginLoader::instance().load("good_dep");
  EXPECT_EQ(active_provider("testns::twice", DispatchKey::CPU), "fast");
  const int64_t base = fast_calls();  // the counter restarted with the fresh copy of the file
  twice_op(x);
  EXPECT_EQ(fast_calls(), base + 1);
}

TEST_F(PluginLoaderTest, LoadingAndSwitchingProvidersWhileAnotherThreadDispatches) {
  ScopedPluginPath path(test_plugin_dir());
  PluginLoader::instance().load("good_ops");
  const auto twice_op =
      Dispatcher::instance().find_op_or_throw("testns::twice").typed<Tensor(const Tensor&)>();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, wrong{0};
  std::thread caller([&] {
    const Tensor x = Tensor::from_vector<float>({1, 2}, std::vector<int64_t>{2});
    while (!stop.load()) {
      if (values(twice_op(x)) != std::vector<float>{2, 4}) wrong.fetch_add(1);
      calls.fetch_add(1);
    }
  });
  // Registration may happen while other threads dispatch (unloading may not: the caller's
  // thread could be inside the departing kernel).
  PluginLoader::instance().load("good_dep");
  Dispatcher& d = Dispatcher::instance();
  for (int i = 0; i < 200; ++i) {
    d.set_preferred_provider(DispatchKey::CPU, i % 2 ? "good_ops" : "");
    d.set_provider_override("testns::twice", DispatchKey::CPU, i % 3 ? "fast" : "");
  }
  d.set_provider_override("testns::twice", DispatchKey::CPU, "");
  while (calls.load() < 1000) std::this_thread::yield();
  stop = true;
  caller.join();
  EXPECT_EQ(wrong.load(), 0);
}

// ---- a plugin that brings a device ----

TEST_F(PluginLoaderTest, FakeDevicePluginOwnsItsAllocatorAndKernels) {
  ScopedPluginPath path(test_plugin_dir());
  const PluginInfo info = PluginLoader::instance().load("fake_device");
  EXPECT_EQ(info.registrations,
            (std::vector<std::string>{
                "device type 'fake' (dispatch key FAKE)",
                "allocator 'fake-malloc' for device type 'fake'",
                "generator factory for device type 'fake'",
                "impl testns::twice for FAKE (provider 'fake_device', priority 0)"}));
  const Device fake("fake");
  Allocator& alloc = get_allocator(fake.type());
  EXPECT_EQ(alloc.name(), "fake-malloc");
  const int64_t live_before = alloc.stats().live_blocks;
  {
    Tensor x = Tensor::empty({4}, TensorOptions{}.with(fake));
    EXPECT_EQ(x.device().type(), fake.type());
    EXPECT_EQ(x.storage().impl()->allocator(), &alloc);
    float* p = x.data_ptr<float>();
    for (int i = 0; i < 4; ++i) p[i] = static_cast<float>(i);
    Tensor y = twice(x);  // the FAKE kernel
    EXPECT_EQ(y.device().type(), fake.type());
    EXPECT_EQ(values(y), (std::vector<float>{0, 2, 4, 6}));
    EXPECT_EQ(alloc.stats().live_blocks, live_before + 2);

    Generator& g = default_generator(fake);
    EXPECT_EQ(g.device().type(), fake.type());
    g.manual_seed(7);
    const uint64_t a = g.next_u64();
    g.manual_seed(7);
    EXPECT_EQ(g.next_u64(), a);

    const auto state = registry_state();
    try {
      PluginLoader::instance().unload("fake_device");
      FAIL() << "unload should be refused while fake tensors live";
    } catch (const PluginError& e) {
      const std::string msg = e.what();
      EXPECT_TRUE(contains(msg, "cannot unload plugin 'fake_device'")) << msg;
      EXPECT_TRUE(contains(msg, "2 memory blocks (32 bytes)")) << msg;
      EXPECT_TRUE(contains(msg, "allocator 'fake-malloc' for device type 'fake'")) << msg;
      EXPECT_TRUE(contains(msg, "live tensors")) << msg;
    }
    EXPECT_EQ(registry_state(), state);
    EXPECT_TRUE(PluginLoader::instance().is_loaded("fake_device"));
  }
  EXPECT_EQ(alloc.stats().live_blocks, live_before);
  PluginLoader::instance().unload("fake_device");

  // Its allocator, generator factory and FAKE kernel are gone; the device type stays
  // (types are permanent), and the CPU kernel of good_ops still works.
  EXPECT_EQ(find_allocator(fake.type()), nullptr);
  EXPECT_THROW(default_generator(fake), DeviceError);
  Dispatcher& d = Dispatcher::instance();
  for (const KernelInfo& k : d.kernels(d.find_op_or_throw("testns::twice"))) {
    EXPECT_NE(k.key, backend_key(fake.type()));
  }
  HostAllocator host(fake.type());
  {
    RegistrationHandle use_host = register_allocator(fake.type(), &host);
    Tensor x = Tensor::empty({2}, TensorOptions{}.with(fake));
    try {
      twice(x);
      FAIL() << "the FAKE kernel should be gone";
    } catch (const NotImplementedError& e) {
      const std::string msg = e.what();
      EXPECT_TRUE(contains(msg, "Could not run 'testns::twice'")) << msg;
      EXPECT_TRUE(contains(msg, "FAKE")) << msg;
      EXPECT_TRUE(contains(msg, "CPU: good_ops")) << msg;
    }
  }
  EXPECT_EQ(values(twice(Tensor::from_vector<float>({4}, std::vector<int64_t>{1}))),
            (std::vector<float>{8}));
}

// ---- cycles ----

TEST_F(PluginLoaderTest, TensorWithAPluginDeleterOutlivesTheUnload) {
  // Note [Unload keeps code mapped]: the tensor's deleter is plugin code; freeing the
  // tensor after the unload must not jump into an unmapped file.
  PluginLoader::instance().load(plugin_file("adopt_memory"));
  Tensor t;
  {
    auto make = Dispatcher::instance().find_op_or_throw("adoptns::make").typed<Tensor(int64_t)>();
    t = make(4);
  }
  EXPECT_EQ(values(t), (std::vector<float>{0, 1, 2, 3}));
  PluginLoader::instance().unload("adopt_memory");
  EXPECT_FALSE(Dispatcher::instance().find_op("adoptns::make"));
  EXPECT_TRUE(is_mapped(plugin_file("adopt_memory")));
  t = Tensor();  // runs the plugin's deleter: must not crash
  SUCCEED();
}

TEST_F(PluginLoaderTest, AThrowingStaticInitialiserIsReportedAndRemembered) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The exception unwinds through dlopen, which glibc supports but the sanitizers'
  // dlopen interceptor does not (it terminates). `loom plugin check` isolates this case
  // in a child process.
  GTEST_SKIP() << "exceptions cannot unwind through the sanitizers' dlopen interceptor";
#endif
  const std::string f = plugin_file("throws_in_init");
  expect_refused(f,
                 {"cannot load plugin file '" + f + "'",
                  "one of its static initialisers threw: boom in a static initialiser"},
                 /*expect_closed=*/false);
  expect_refused(f,
                 {"its static initialisers threw when it was first opened", "restart the process"},
                 /*expect_closed=*/false);
}

TEST_F(PluginLoaderTest, LoadUnloadReloadTwentyTimes) {
  ScopedPluginPath none("");
  const std::string f = plugin_file("good_ops");
  const Tensor x = Tensor::from_vector<float>({1.5f}, std::vector<int64_t>{1});
  for (int i = 0; i < 20; ++i) {
    SCOPED_TRACE(i);
    const PluginInfo info = PluginLoader::instance().load(f);
    // The file's static initialisers ran again: a fresh copy queued its blocks.
    ASSERT_EQ(info.registrations.size(), 2u);
    EXPECT_EQ(values(twice(x)), (std::vector<float>{3}));
    PluginLoader::instance().unload("good_ops");
    ASSERT_FALSE(Dispatcher::instance().find_op("testns::twice"));
    ASSERT_TRUE(is_mapped(f)) << "Note [Unload keeps code mapped]";
  }
}

TEST_F(PluginLoaderTest, DevicePluginCyclesWithTensorsInBetween) {
  ScopedPluginPath path(test_plugin_dir());
  for (int i = 0; i < 20; ++i) {
    SCOPED_TRACE(i);
    PluginLoader::instance().load("fake_device");
    {
      Tensor x = Tensor::empty({3}, TensorOptions{}.with(Device("fake")));
      for (float& v : std::span<float>(x.data_ptr<float>(), 3)) v = 1.f;
      EXPECT_EQ(values(twice(x)), (std::vector<float>{2, 2, 2}));
      try {
        PluginLoader::instance().unload("fake_device");
        ADD_FAILURE() << "unload should be refused while x lives";
      } catch (const PluginError& e) {
        EXPECT_TRUE(contains(e.what(), ": 1 memory block (12 bytes) of its allocator")) << e.what();
      }
    }
    PluginLoader::instance().unload("fake_device");
    PluginLoader::instance().unload("good_ops");
    ASSERT_FALSE(DeviceType::is_registered("fake") &&
                 find_allocator(DeviceType::from_name("fake")));
  }
}

TEST_F(PluginLoaderTest, ReloadsAFileThatStayedInMemory) {
  // resident_ops is linked with -z nodelete: dlclose leaves it mapped and its static
  // initialisers do not run again on the next dlopen (Note [Resident plugin files]).
  const std::string f = plugin_file("resident_ops");
  const Tensor x = Tensor::from_vector<float>({2}, std::vector<int64_t>{1});
  int first_run = 0;  // the hook's counter lives as long as the mapping: maybe an earlier test
  for (int i = 0; i < 20; ++i) {
    SCOPED_TRACE(i);
    const PluginInfo info = PluginLoader::instance().load(f);
    ASSERT_FALSE(info.registrations.empty());
    if (i == 0)
      first_run = std::stoi(info.registrations[0].substr(std::strlen("on-load hook run ")));
    EXPECT_EQ(info.registrations,
              (std::vector<std::string>{
                  loom::str_cat("on-load hook run ", first_run + i),
                  "def residentns::negate(Tensor x) -> Tensor",
                  "impl residentns::negate for CPU (provider 'resident_ops', priority 0)"}));
    auto negate = Dispatcher::instance()
                      .find_op_or_throw("residentns::negate")
                      .typed<Tensor(const Tensor&)>();
    EXPECT_EQ(values(negate(x)), (std::vector<float>{-2}));
    PluginLoader::instance().unload("resident_ops");
    ASSERT_FALSE(Dispatcher::instance().find_op("residentns::negate"));
    ASSERT_TRUE(is_mapped(f)) << "the test needs a file that stays mapped";
  }
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Note [Device plugins at init]: without its driver a device plugin is not loaded, and a
// device string of its type says why (as PyTorch's "Found no NVIDIA driver on your system").
TEST(PluginLoaderDriver, NoDriverIsWhatAMissingDeviceTypeSays) {
  PluginLoader::instance().load_if_driver("nodriver_test", "nodriver_dev",
                                          "libloom_no_such_driver.so.9", "Test driver");
  EXPECT_FALSE(PluginLoader::instance().is_loaded("nodriver_test"));
  try {
    (void)DeviceType::from_name("nodriver_dev");
    ADD_FAILURE() << "no DeviceError";
  } catch (const DeviceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("found no Test driver on this system (libloom_no_such_driver.so.9"),
              std::string::npos)
        << m;
  }
  // With a driver library that opens (libc's), a plugin that is not there is a recorded
  // reason too, not an exception.
  PluginLoader::instance().load_if_driver("nodriver_test", "nodriver_dev2", "libc.so.6",
                                          "Test driver");
  try {
    (void)DeviceType::from_name("nodriver_dev2");
    ADD_FAILURE() << "no DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("the nodriver_test plugin could not be loaded"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom
