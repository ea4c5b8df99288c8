// Every nn layer and loss compiled with loom::compile against eager (being written).
#include <gtest/gtest.h>

#include "loom/compile/compile.h"
#include "loom/loom.h"
#include "loom/nn/nn.h"
#include "models.h"

TEST(NnLayersCompiled, Placeholder) {}
