// A stand-in for libFuzzer where the compiler has none (GCC): runs LLVMFuzzerTestOneInput
// over every file of the corpus folders given, then over deterministic mutations of each
// (truncations, bit flips, byte overwrites with interesting values, inserted and deleted
// ranges, header-length rewrites), so the target builds and runs in every CI. Real
// coverage-guided fuzzing needs clang: see README.md.
//
//   safetensors_fuzz_driver [--mutations N] [--seed S] CORPUS_DIR_OR_FILE...

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  auto pos = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < steps; ++k) {
    switch (rng() % 7) {
      case 0:  // truncate
        s.resize(pos(s.size() + 1));
        break;
      case 1:  // flip a bit
        if (!s.empty()) s[pos(s.size())] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 2: {  // overwrite a byte with an interesting value
        static const char kBytes[] = {0,
                                      1,
                                      '"',
                                      '{',
                                      '}',
                                      '[',
                                      ']',
                                      ',',
                                      ':',
                                      '-',
                                      '9',
                                      '\\',
                                      static_cast<char>(0xff),
                                      static_cast<char>(0x80)};
        if (!s.empty()) s[pos(s.size())] = kBytes[rng() % sizeof kBytes];
        break;
      }
      case 3: {  // insert a copy of a range
        if (s.empty()) break;
        const size_t a = pos(s.size()), n = 1 + pos(std::min<size_t>(32, s.size() - a));
        s.insert(pos(s.size() + 1), s.substr(a, n));
        break;
      }
      case 4: {  // delete a range
        if (s.empty()) break;
        const size_t a = pos(s.size());
        s.erase(a, 1 + pos(std::min<size_t>(32, s.size() - a)));
        break;
      }
      case 5: {  // rewrite the header length
        if (s.size() < 8) break;
        uint64_t n = 0;
        for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<uint8_t>(s[i])} << (8 * i);
        const uint64_t choices[] = {0,           1,          n - 1,        n + 1,
                                    n + 8,       s.size(),   s.size() - 8, 100'000'000,
                                    100'000'001, UINT64_MAX, rng()};
        n = choices[rng() % (sizeof choices / sizeof choices[0])];
        for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
        break;
      }
      case 6: {  // replace a digit run with a big or negative number
        const size_t at = s.find_first_of("0123456789", pos(s.size()));
        if (at == std::string::npos) break;
        static const char* kNumbers[] = {"18446744073709551615",    "-1", "4294967296", "1e3",
                                         "99999999999999999999999", "0.5"};
        size_t end = at;
        while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
        s.replace(at, end - at, kNumbers[rng() % 6]);
        break;
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int mutations = 2000;
  uint64_t seed = 1;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) {
      mutations = std::atoi(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path().string());
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations N] [--seed S] CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::sort(files.begin(), files.end());
  std::mt19937_64 rng(seed);
  long runs = 0;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    run(input);
    ++runs;
    for (int m = 0; m < mutations; ++m, ++runs) run(mutate(input, rng));
  }
  std::printf("%ld inputs from %zu corpus files: no crash\n", runs, files.size());
  return 0;
}
