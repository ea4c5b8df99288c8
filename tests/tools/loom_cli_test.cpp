// Runs build/bin/loom (and loom-bench) as a user would and checks exit status and output.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "elf_test_util.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Ran {
  int status = -1;  ///< exit status, or 128 + signal
  std::string out;
  std::string err;
};

/// Runs program with args; env entries ("NAME=value") replace or extend the environment.
Ran run_program(const std::string& program, const std::vector<std::string>& args,
                const std::vector<std::string>& env = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& o : env) {
      if (entry.substr(0, entry.find('=') + 1) == o.substr(0, o.find('=') + 1)) replaced = true;
    }
    if (!replaced) env_strings.push_back(entry);
  }
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> words = {program};
  words.insert(words.end(), args.begin(), args.end());
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  EXPECT_EQ(pipe2(out_pipe, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  Ran r;
  if (rc != 0) {
    ADD_FAILURE() << "cannot run " << program << ": " << std::strerror(rc);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

Ran loom(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return run_program(LOOM_CLI_PATH, args, env);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string plugin(const std::string& name) {
  const bool misbehaving = name == "crash" || name == "hang" || name == "exits";
  return std::string(LOOM_TOOLS_TEST_PLUGIN_DIR) + (misbehaving ? "/misbehaving" : "") +
         "/libloom_tools_test_" + name + ".so";
}

// ---- the command itself ----

TEST(LoomCli, HelpVersionAndUnknownCommand) {
  Ran help = loom({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(has(help.out, "usage: loom")) << help.out;
  EXPECT_TRUE(has(help.out, "plugin check")) << help.out;

  Ran version = loom({"--version"});
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.out, "loom " LOOM_VERSION_STRING "\n");

  Ran none = loom({});
  EXPECT_EQ(none.status, 2);
  EXPECT_TRUE(has(none.err, "usage: loom")) << none.err;

  Ran unknown = loom({"frobnicate"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_TRUE(has(unknown.err, "loom: error: unknown command 'frobnicate'")) << unknown.err;
  EXPECT_TRUE(has(unknown.err, "usage: loom")) << unknown.err;

  Ran bad_option = loom({"info", "--colour"});
  EXPECT_EQ(bad_option.status, 2);
  EXPECT_TRUE(has(bad_option.err, "unknown option '--colour'")) << bad_option.err;

  Ran group = loom({"schema"});
  EXPECT_EQ(group.status, 2);
  EXPECT_TRUE(has(group.err, "needs a subcommand")) << group.err;
}

TEST(LoomCli, InfoShowsVersionDevicesAndPlugins) {
  Ran r = loom({"info"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "Loom " LOOM_VERSION_STRING)) << r.out;
  EXPECT_TRUE(has(r.out, "cpu")) << r.out;
  EXPECT_TRUE(has(r.out, "C++20")) << r.out;
  EXPECT_TRUE(has(r.out, "LOOM_WITH_LIBTORCH")) << r.out;
  EXPECT_TRUE(has(r.out, "Plugin search path")) << r.out;
  EXPECT_TRUE(has(r.out, "Preferred providers")) << r.out;
  // The training libraries and the plugin that holds optim's ops (issue: nn, optim and data
  // were not listed).
  EXPECT_TRUE(has(r.out, "C++ libraries")) << r.out;
  EXPECT_TRUE(has(r.out, "libloom_optim.so")) << r.out;
  EXPECT_TRUE(has(r.out, "\n  ops_optim " LOOM_VERSION_STRING)) << r.out;
}

TEST(LoomCli, InfoReportsARefusedPluginWithoutFailing) {
  Ran r = loom({"info"}, {std::string("LOOM_PLUGIN_PATH=") + LOOM_TOOLS_TEST_PLUGIN_DIR});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "tools_test_good 1.2.3")) << r.out;
  EXPECT_TRUE(has(r.out, "tools_test_needs_good 0.1")) << r.out;
  EXPECT_TRUE(has(r.out, "(LOOM_PLUGIN_PATH)")) << r.out;
  EXPECT_TRUE(has(r.out, "FAILED " + plugin("needs_missing"))) << r.out;
  EXPECT_TRUE(has(r.out, "tools_test_no_such_plugin")) << r.out;
  // The Meta kernel of tools_test_needs_good shows up among the providers.
  EXPECT_TRUE(has(r.out, "tools_test_needs_good (1 op)")) << r.out;
}

/// A fresh folder for one test, removed with its contents at the end of the scope.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& name)
      : path_(fs::path(::testing::TempDir()) / (name + "." + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  /// Writes bytes to the file `name` here; returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path_ / name, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The bytes of an ELF file for another machine (AArch64, or x86-64 on AArch64).
std::string for_another_machine(std::string elf) {
  Elf64_Ehdr h;
  std::memcpy(&h, elf.data(), sizeof(h));
#if defined(__aarch64__)
  h.e_machine = EM_X86_64;
#else
  h.e_machine = EM_AARCH64;
#endif
  std::memcpy(elf.data(), &h, sizeof(h));
  return elf;
}

/// elf cut in the middle of the bytes its PT_LOAD segments map: dlopen would die of SIGBUS.
std::string cut_inside_segments(const std::string& elf) {
  return elf.substr(0, loom::testing::end_of_loaded_bytes(elf) / 2);
}

/// The reason `loom info` printed under "  <verdict> <path>" ("" if there is no such entry).
std::string info_entry(const std::string& out, const std::string& verdict,
                       const std::string& path) {
  const std::string head = "  " + verdict + " " + path + "\n      ";
  const size_t at = out.find(head);
  if (at == std::string::npos) return "";
  const size_t from = at + head.size();
  return out.substr(from, out.find('\n', from) - from);
}

TEST(LoomCli, InfoNamesEveryFileOfAPluginFolderThatItDidNotLoad) {
  // Each of these once crashed `loom info` (SIGBUS on the truncated copy), stopped it (an int
  // thrown by plugin code) or went unmentioned; now each is named with the reason.
  ScratchFolder dir("loom_cli_info_folder");
  const std::string good = read_file(plugin("good"));
  const std::string good_copy = dir.write("libloom_tools_test_good.so", good);
  const std::string throws_int =
      dir.write("libloom_tools_test_throws_int.so", read_file(plugin("throws_int")));
  const std::string entry_throws =
      dir.write("libloom_tools_test_entry_throws.so", read_file(plugin("entry_throws")));
  const std::string cut = dir.write("libloom_tools_test_cut.so", cut_inside_segments(good));
  const std::string empty = dir.write("libloom_tools_test_empty.so", "");
  const std::string text = dir.write("libloom_tools_test_text.so", "not a library\n");
  const std::string machine = dir.write("libloom_tools_test_machine.so", for_another_machine(good));
  const std::string readme = dir.write("README.md", "# plugins\n");
  const std::string folder = (dir.path() / "libloom_tools_test_folder.so").string();
  fs::create_directory(folder);

  Ran r = loom({"info"}, {"LOOM_PLUGIN_PATH=" + dir.path().string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_TRUE(has(r.out, "tools_test_good 1.2.3")) << r.out;
  EXPECT_TRUE(has(r.out, "5 failed, 3 skipped)")) << r.out;
  struct Entry {
    const char* verdict;
    std::string path;
    std::string reason;
  };
  for (const Entry& e : {
           Entry{"FAILED", throws_int,
                 "failed to register, and everything it registered was rolled back: its register "
                 "function threw a non-standard exception (not derived from std::exception)"},
           Entry{"FAILED", entry_throws,
                 "': its entry point threw a non-standard exception (not derived from "
                 "std::exception)"},
           Entry{"FAILED", cut, "': it is truncated: "},
           Entry{"FAILED", empty, "': it is empty (0 bytes)"},
           Entry{"FAILED", text, "': it is not a shared library (no ELF header)"},
           Entry{"skipped", machine, "it is built for "},
           Entry{"skipped", folder, "it is a directory, not a plugin file"},
           Entry{"skipped", readme, "not a plugin file name (plugins are named libloom_<name>.so)"},
       }) {
    const std::string reason = info_entry(r.out, e.verdict, e.path);
    EXPECT_TRUE(has(reason, e.reason)) << e.verdict << " " << e.path << ": '" << reason << "' in\n"
                                       << r.out;
  }
  EXPECT_EQ(info_entry(r.out, "FAILED", good_copy), "");
  EXPECT_EQ(info_entry(r.out, "skipped", good_copy), "");
}

// ---- schema check ----

struct SchemaCase {
  const char* name;      ///< test name
  const char* input;     ///< what the user types
  const char* expected;  ///< canonical form (valid schemas) or the column named (broken ones)
};
std::string case_name(const ::testing::TestParamInfo<SchemaCase>& info) { return info.param.name; }
void PrintTo(const SchemaCase& c, std::ostream* os) { *os << '\'' << c.input << '\''; }

class SchemaCheckCanonical : public ::testing::TestWithParam<SchemaCase> {};

TEST_P(SchemaCheckCanonical, PrintsTheCanonicalSchema) {
  Ran r = loom({"schema", "check", GetParam().input});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(GetParam().expected) + "\n");
  EXPECT_EQ(r.err, "");
}

// Schemas copied from PyTorch's native_functions.yaml are already canonical, so they print
// back unchanged; the last case shows whitespace being normalised.
constexpr const char* kAdd = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
constexpr const char* kBatchNorm =
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)";
constexpr const char* kMaxPool =
    "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
    "int[2] dilation=1, bool ceil_mode=False) -> Tensor";
constexpr const char* kLayerNorm =
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
    "float eps=1e-05, bool cudnn_enable=True) -> Tensor";
constexpr const char* kSplit =
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]";
constexpr const char* kAddOut =
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)";
constexpr const char* kNllLoss =
    "aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
    "SymInt ignore_index=-100) -> Tensor";

INSTANTIATE_TEST_SUITE_P(
    RealSchemas, SchemaCheckCanonical,
    ::testing::Values(SchemaCase{"add_Tensor", kAdd, kAdd},
                      SchemaCase{"native_batch_norm", kBatchNorm, kBatchNorm},
                      SchemaCase{"max_pool2d", kMaxPool, kMaxPool},
                      SchemaCase{"layer_norm", kLayerNorm, kLayerNorm},
                      SchemaCase{"split_Tensor", kSplit, kSplit},
                      SchemaCase{"add_out", kAddOut, kAddOut},
                      SchemaCase{"nll_loss", kNllLoss, kNllLoss},
                      SchemaCase{"whitespace",
                                 "  add.Tensor( Tensor self,Tensor other , * , Scalar alpha = 1 "
                                 ")->Tensor",
                                 kAdd}),
    case_name);

class SchemaCheckMalformed : public ::testing::TestWithParam<SchemaCase> {};

TEST_P(SchemaCheckMalformed, ExitsTwoNamingTheColumn) {
  Ran r = loom({"schema", "check", GetParam().input});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has(r.err, "loom: error: ")) << r.err;
  EXPECT_TRUE(has(r.err, std::string("column ") + GetParam().expected)) << r.err;
  EXPECT_TRUE(has(r.err, "^")) << r.err;  // the caret under the column
}

INSTANTIATE_TEST_SUITE_P(
    BrokenSchemas, SchemaCheckMalformed,
    ::testing::Values(
        SchemaCase{"unclosed_arguments", "add.Tensor(Tensor self, Tensor other", "37"},
        SchemaCase{"missing_return", "add(Tensor self) ->", "20"},
        SchemaCase{"trailing_comma", "add(Tensor self, Tensor other,) -> Tensor", "31"},
        SchemaCase{"unclosed_alias", "add(Tensor(a! self) -> Tensor", "15"},
        SchemaCase{"missing_name", "(Tensor self) -> Tensor", "1"},
        SchemaCase{"unknown_type", "add(Tensr self) -> Tensor", "5"}),
    case_name);

TEST(LoomCli, SchemaCheckNeedsExactlyOneSchema) {
  Ran r = loom({"schema", "check"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "usage: loom schema check SCHEMA")) << r.err;
}

// ---- ops ----

TEST(LoomCli, OpsListsSchemasAndProviders) {
  Ran r = loom({"ops"}, {std::string("LOOM_PLUGIN_PATH=") + LOOM_TOOLS_TEST_PLUGIN_DIR + "/none"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "operator")) << r.out;

  Ran cpu = loom({"ops", "--backend", "cpu"});
  EXPECT_EQ(cpu.status, 0) << cpu.err;
  EXPECT_TRUE(has(cpu.out, "for CPU")) << cpu.out;
}

TEST(LoomCli, OpsShowsAPluginsKernelsAndMarksTheActiveOne) {
  Ran r = loom({"ops", "--backend", "CPU"},
               {std::string("LOOM_PLUGIN_PATH=") + LOOM_TOOLS_TEST_PLUGIN_DIR + "/none"});
  ASSERT_EQ(r.status, 0) << r.err;
  // With only the install's plugins; the line format is "KEY  *  provider  priority N  origin".
  if (has(r.out, "ops_core")) {
    EXPECT_TRUE(has(r.out, "CPU  *  reference")) << r.out;
  }
}

TEST(LoomCli, OpsWithAnUnknownBackendListsTheKnownKeys) {
  Ran r = loom({"ops", "--backend", "NoSuchKey"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "unknown dispatch key 'NoSuchKey'")) << r.err;
  EXPECT_TRUE(has(r.err, "CPU")) << r.err;
  EXPECT_TRUE(has(r.err, "Autograd")) << r.err;
}

// ---- plugin check ----

TEST(LoomCli, PluginCheckMissingFile) {
  Ran r = loom({"plugin", "check", "/nonexistent/libloom_nothing.so"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "REFUSED")) << r.out;
  EXPECT_TRUE(has(r.out, "no such file")) << r.out;
}

TEST(LoomCli, PluginCheckTextFileNamedLikeAPlugin) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("loom_cli_test." + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path fake = dir / "libloom_x.so";
  std::ofstream(fake) << "this is not a shared library\n";
  Ran r = loom({"plugin", "check", fake.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "REFUSED")) << r.out;
  EXPECT_TRUE(has(r.out, "cannot load plugin file")) << r.out;
  EXPECT_TRUE(has(r.out, fake.string())) << r.out;
}

TEST(LoomCli, PluginCheckRefusesATruncatedCopyInsteadOfCrashingOnIt) {
  ScratchFolder dir("loom_cli_check_cut");
  const std::string good = read_file(plugin("good"));
  const std::string cut = dir.write("libloom_tools_test_cut.so", cut_inside_segments(good));
  Ran r = loom({"plugin", "check", cut});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "REFUSED " + cut)) << r.out;
  EXPECT_TRUE(has(r.out, "it is truncated: ")) << r.out;
  EXPECT_FALSE(has(r.out, "crashed")) << r.out;
}

TEST(LoomCli, PluginCheckSaysWhatIsWrongWithAFileThatIsNoPlugin) {
  ScratchFolder dir("loom_cli_check_kinds");
  const std::string folder = (dir.path() / "libloom_tools_test_folder.so").string();
  fs::create_directory(folder);
  const std::string machine =
      dir.write("libloom_tools_test_machine.so", for_another_machine(read_file(plugin("good"))));
  for (const auto& [path, reason] :
       {std::pair<std::string, std::string>{folder, "it is a directory, not a plugin file"},
        std::pair<std::string, std::string>{machine, "it is built for "}}) {
    Ran r = loom({"plugin", "check", path});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(has(r.out, "REFUSED " + path)) << r.out;
    EXPECT_TRUE(has(r.out, reason)) << r.out;
  }
}

TEST(LoomCli, PluginCheckNamesARegisterFunctionThatThrowsAnInt) {
  Ran r = loom({"plugin", "check", plugin("throws_int")});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "REFUSED " + plugin("throws_int"))) << r.out;
  EXPECT_TRUE(has(r.out, "plugin 'tools_test_throws_int'")) << r.out;
  EXPECT_TRUE(has(r.out, "its register function threw a non-standard exception")) << r.out;
}

TEST(LoomCli, PluginCheckReportsWhatAPluginRegisters) {
  Ran r = loom({"plugin", "check", plugin("good")});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "OK plugin 'tools_test_good' 1.2.3 can be loaded")) << r.out;
  EXPECT_TRUE(has(r.out, "defines tools_test::twice")) << r.out;
  EXPECT_TRUE(has(r.out, "ABI            1.0")) << r.out;
  EXPECT_TRUE(has(r.out, "def tools_test::twice(Tensor self) -> Tensor")) << r.out;
  EXPECT_TRUE(has(r.out, "impl tools_test::twice for CPU")) << r.out;
}

TEST(LoomCli, PluginCheckJsonReport) {
  Ran r = loom({"plugin", "check", "--json", plugin("good")});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report["ok"].get<bool>());
  EXPECT_EQ(report["plugin"]["name"], "tools_test_good");
  EXPECT_EQ(report["plugin"]["version"], "1.2.3");
  EXPECT_EQ(report["plugin"]["registrations"].size(), 2u);
}

TEST(LoomCli, PluginCheckResolvesDependenciesFromTheSearchPath) {
  Ran r = loom({"plugin", "check", plugin("needs_good")},
               {std::string("LOOM_PLUGIN_PATH=") + LOOM_TOOLS_TEST_PLUGIN_DIR});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "depends on     tools_test_good")) << r.out;
  EXPECT_TRUE(has(r.out, "loaded first   tools_test_good")) << r.out;
  EXPECT_TRUE(has(r.out, "impl tools_test::twice for Meta")) << r.out;
}

TEST(LoomCli, PluginCheckRefusesAMissingDependency) {
  Ran r = loom({"plugin", "check", plugin("needs_missing")});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "requires plugin 'tools_test_no_such_plugin'")) << r.out;
}

TEST(LoomCli, PluginCheckSurvivesAPluginThatCrashes) {
  // Under AddressSanitizer the child must die of the signal, not of ASan's report.
  Ran r = loom({"plugin", "check", plugin("crash")}, {"ASAN_OPTIONS=handle_segv=0"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "the plugin crashed the checking process (signal 11: SIGSEGV)"))
      << r.out << r.err;
}

TEST(LoomCli, PluginCheckReportsAPluginThatExitsTheProcess) {
  Ran r = loom({"plugin", "check", plugin("exits")});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "ended with exit status 3 before it could report")) << r.out;
}

TEST(LoomCli, PluginCheckGivesUpOnAPluginThatHangs) {
  Ran r = loom({"plugin", "check", "--timeout", "1", plugin("hang")});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "did not finish loading within 1 s")) << r.out;

  Ran bad = loom({"plugin", "check", "--timeout", "soon", plugin("hang")});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(has(bad.err, "--timeout expects a positive number of seconds")) << bad.err;
}

TEST(LoomCli, PluginCheckByNameSearchesThePath) {
  Ran r = loom({"plugin", "check", "tools_test_good"},
               {std::string("LOOM_PLUGIN_PATH=") + LOOM_TOOLS_TEST_PLUGIN_DIR});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  Ran missing = loom({"plugin", "check", "tools_test_nowhere"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(has(missing.out, "cannot find plugin 'tools_test_nowhere'")) << missing.out;
}

// ---- conformance onnx ----

// Nothing to run is refused (exit 2) rather than reported as "0 passed, 0 failed": a script
// must not take an empty or mistyped folder, or a --filter that matches nothing, for success.
// All of it is decided before any op pack loads or any test runs.
TEST(LoomCli, ConformanceWithNoTestToRunExitsTwoSayingWhy) {
  ScratchFolder dir("loom_cli_conformance");
  const std::string empty = (dir.path() / "empty").string();
  const std::string one = (dir.path() / "one").string();
  fs::create_directories(empty);
  fs::create_directories(dir.path() / "one" / "test_x");

  Ran r = loom({"conformance", "onnx", empty});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "no ONNX node tests found in " + empty)) << r.err;
  r = loom({"conformance", "onnx", "--filter", "zzz_nomatch", one});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "no test matches --filter zzz_nomatch in " + one)) << r.err;
  r = loom({"conformance", "onnx", "--filter", "zzz_nomatch", empty});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "no ONNX node tests found in " + empty)) << r.err;
  EXPECT_EQ(r.out, "");
}

// Path arguments that name the wrong kind of thing say which and what, before any test runs.
TEST(LoomCli, ConformanceNamesAMissingFolderAFileAndAnUnwritableJsonPath) {
  ScratchFolder dir("loom_cli_conformance_paths");
  const std::string one = (dir.path() / "one").string();
  fs::create_directories(dir.path() / "one" / "test_x");
  const std::string file = dir.write("file", "x");
  const std::string none = (dir.path() / "none").string();

  Ran r = loom({"conformance", "onnx", none});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, none + ": no such folder")) << r.err;
  r = loom({"conformance", "onnx", file});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, file + ": is a file, not a folder of ONNX node tests")) << r.err;
  // test_x would run (and fail: it has no model.onnx) if the --json path were checked last.
  r = loom({"conformance", "onnx", "--json", one, one});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--json " + one + ": is a directory")) << r.err;
  EXPECT_FALSE(has(r.out, "test_x")) << r.out;
  r = loom({"conformance", "onnx", "--json", none + "/r.json", one});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--json " + none + "/r.json: its folder " + none + " does not exist"))
      << r.err;
}

// ---- bench ----

TEST(LoomCli, BenchRunsLoomBench) {
  if (std::string(LOOM_BENCH_PATH).empty()) GTEST_SKIP() << "loom-bench is not built";
  Ran r = loom({"bench", "--list"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "dispatch.noop.typed")) << r.out;
}

TEST(LoomBench, WritesOneJsonObjectPerLine) {
  if (std::string(LOOM_BENCH_PATH).empty()) GTEST_SKIP() << "loom-bench is not built";
  const fs::path out =
      fs::path(::testing::TempDir()) / ("loom_bench_test." + std::to_string(getpid()) + ".jsonl");
  Ran r = run_program(LOOM_BENCH_PATH, {"--filter", "^dispatch\\.noop\\.", "--rounds", "2",
                                        "--sample-ms", "2", "--json", out.string()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::ifstream in(out);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_TRUE(row["name"].get<std::string>().starts_with("dispatch.noop.")) << row;
    EXPECT_EQ(row["unit"], "ns") << row;
    EXPECT_GT(row["loom"].get<double>(), 0) << row;
    // Two libtorch peers (bench/README.md): ratio is against the faster (here: lower ns).
    double fastest = 0;
    for (const char* peer : {"torch", "libtorch113"}) {
      ASSERT_TRUE(row.contains(peer)) << row;
      if (row[peer].is_null()) continue;
      const double v = row[peer].get<double>();
      if (fastest == 0 || v < fastest) fastest = v;
    }
    if (fastest == 0) {
      EXPECT_TRUE(row["ratio"].is_null()) << row;
    } else {
      EXPECT_NEAR(row["ratio"].get<double>(), row["loom"].get<double>() / fastest,
                  1e-2 * row["ratio"].get<double>())
          << row;
    }
  }
}

TEST(LoomBench, BadFilterIsAUsageError) {
  if (std::string(LOOM_BENCH_PATH).empty()) GTEST_SKIP() << "loom-bench is not built";
  Ran r = run_program(LOOM_BENCH_PATH, {"--filter", "("});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--filter")) << r.err;
}

}  // namespace
