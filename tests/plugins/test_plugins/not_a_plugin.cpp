// Test plugin `not_a_plugin`: a perfectly good shared library that exports something,
// but not the Loom entry point.

extern "C" __attribute__((visibility("default"))) int not_a_plugin_answer(void) { return 42; }
