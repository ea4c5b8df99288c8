#pragma once
/// @file
/// Aligned text columns for `loom info` and `loom ops`.

#include <iosfwd>
#include <string>
#include <vector>

namespace loom::cli {

/// Rows of cells printed with each column padded to its widest cell (the last column is
/// not padded, so lines carry no trailing blanks).
class Table {
 public:
  /// Adds a row; rows may have different numbers of cells.
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// True if no row was added.
  bool empty() const { return rows_.empty(); }
  /// Writes the rows, each line starting with indent spaces, columns two spaces apart.
  void print(std::ostream& out, int indent = 2) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace loom::cli
