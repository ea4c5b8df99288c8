// CSV datasets (loom/data/datasets.h).

#include <charconv>
#include <cmath>
#include <fstream>

#include "loom/data/datasets.h"

namespace loom::data {
namespace {

std::vector<std::string> split_line(const std::string& line, char delimiter) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = line.find(delimiter, start);
    out.push_back(line.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  for (std::string& f : out) {  // trim spaces and a Windows line end
    const size_t b = f.find_first_not_of(" \t\r");
    const size_t e = f.find_last_not_of(" \t\r");
    f = b == std::string::npos ? std::string() : f.substr(b, e - b + 1);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
  }
  return out;
}

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

CsvDataset::CsvDataset(const std::string& path, CsvOptions options) {
  std::ifstream in(path);
  LOOM_CHECK(in.good(), "CsvDataset: cannot open '", path, "'");
  std::string line;
  int64_t line_no = 0;
  std::vector<std::string> names;
  int64_t ncols = -1;
  if (options.header) {
    while (std::getline(in, line)) {
      ++line_no;
      if (!blank(line)) break;
    }
    LOOM_CHECK(!blank(line), "CsvDataset: '", path, "' is empty (expected a header line)");
    names = split_line(line, options.delimiter);
    ncols = static_cast<int64_t>(names.size());
  }
  std::vector<std::vector<double>> rows;
  std::vector<int64_t> row_lines;
  while (std::getline(in, line)) {
    ++line_no;
    if (blank(line)) continue;
    const std::vector<std::string> fields = split_line(line, options.delimiter);
    if (ncols < 0) ncols = static_cast<int64_t>(fields.size());
    LOOM_CHECK(static_cast<int64_t>(fields.size()) == ncols, "CsvDataset: '", path, "' line ",
               line_no, ": expected ", ncols, " fields, got ", fields.size());
    std::vector<double> row;
    for (size_t c = 0; c < fields.size(); ++c) {
      const std::string& f = fields[c];
      double v = 0;
      const char* b = f.data();
      const char* e = f.data() + f.size();
      if (!f.empty() && *b == '+') ++b;
      auto [ptr, ec] = std::from_chars(b, e, v);
      LOOM_CHECK(!f.empty() && ec == std::errc() && ptr == e, "CsvDataset: '", path, "' line ",
                 line_no, " column ", c + 1,
                 names.empty() ? std::string() : str_cat(" (", names[c], ")"), ": '", f,
                 "' is not a number");
      row.push_back(v);
    }
    rows.push_back(std::move(row));
    row_lines.push_back(line_no);
  }
  if (ncols < 0) ncols = 0;
  int64_t label = -1;
  if (options.label_name) {
    LOOM_CHECK(options.header, "CsvDataset: label_name '", *options.label_name,
               "' needs header = true");
    for (size_t c = 0; c < names.size(); ++c)
      if (names[c] == *options.label_name) label = static_cast<int64_t>(c);
    LOOM_CHECK(label >= 0, "CsvDataset: '", path, "' has no column '", *options.label_name, "'");
  } else if (options.label_index) {
    label = *options.label_index < 0 ? *options.label_index + ncols : *options.label_index;
    LOOM_CHECK(label >= 0 && label < ncols, "CsvDataset: label_index ", *options.label_index,
               " is out of range for '", path, "' with ", ncols, " columns");
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t nf = label >= 0 ? ncols - 1 : ncols;
  for (int64_t c = 0; c < static_cast<int64_t>(names.size()); ++c)
    if (c != label) feature_names_.push_back(names[c]);
  features_ = Tensor::empty({n, nf});
  float* f = features_.data_ptr<float>();
  int64_t* l = nullptr;
  if (label >= 0) {
    labels_ = Tensor::empty({n}, TensorOptions{}.with(DType::Int64));
    l = labels_.data_ptr<int64_t>();
  }
  for (int64_t r = 0; r < n; ++r) {
    int64_t k = 0;
    for (int64_t c = 0; c < ncols; ++c) {
      const double v = rows[r][c];
      if (c == label) {
        LOOM_CHECK(std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18, "CsvDataset: '",
                   path, "' line ", row_lines[r], ": label ", v, " is not an integer");
        l[r] = static_cast<int64_t>(v);
      } else {
        f[r * nf + k++] = static_cast<float>(v);
      }
    }
  }
}

int64_t CsvDataset::size() const { return features_.size(0); }

Sample CsvDataset::get(int64_t index) const {
  if (!labels_.defined()) return {select_row(features_, index)};
  return {select_row(features_, index), select_row(labels_, index)};
}

}  // namespace loom::data
