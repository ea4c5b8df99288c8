#pragma once
/// @file
/// The `loom` subcommands. Each returns the process exit status (see ExitCode) and may
/// throw UsageError, InvalidInput or any std::exception, which main() reports.

#include "args.h"

namespace loom::cli {

/// `loom info`: version, build configuration, devices, plugin search path, plugins, providers.
int run_info(Args& args);
/// `loom ops [--backend KEY]`: every operator's schema and its kernels per dispatch key.
int run_ops(Args& args);
/// `loom schema check SCHEMA`: parses a schema and prints its canonical form.
int run_schema_check(Args& args);
/// `loom plugin check PATH`: loads one plugin in a child process and reports on it.
int run_plugin_check(Args& args);
/// `loom bench [...]`: replaces this process with loom-bench.
int run_bench(Args& args);
/// `loom train [...]`: runs loom-train (the training job) with the same arguments.
int run_train(Args& args);
/// `loom profile [...] -- PROGRAM`: runs PROGRAM with LOOM_PROFILE set, prints the op table.
int run_profile(Args& args);
/// `loom conformance onnx [DIR]`: runs ONNX's node tests on Loom's ops; exits 1 if one fails.
int run_conformance_onnx(Args& args);

}  // namespace loom::cli
