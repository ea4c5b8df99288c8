// `loom schema check SCHEMA`: the parser's verdict on one schema line.
#include <iostream>

#include "commands.h"
#include "loom/core/error.h"
#include "loom/dispatcher/schema.h"

namespace loom::cli {

int run_schema_check(Args& args) {
  const std::string text = args.positionals(1, 1)[0];
  try {
    std::cout << parse_schema(text).str() << "\n";
  } catch (const Error& e) {
    // SchemaParseError names the column and draws a caret; the schema's own checks
    // (keyword-only order, alias placement) are invalid input as well.
    throw InvalidInput(e.what());
  }
  return kExitOk;
}

}  // namespace loom::cli
