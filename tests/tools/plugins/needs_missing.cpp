// Depends on a plugin that exists nowhere: the loader must refuse it, with the reason.
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("tools_test_needs_missing", "0.1", "depends on a plugin that does not exist",
            "tools_test_no_such_plugin");
