// SPDX-License-Identifier: MIT
// Proportional share of a file's pages among the processes that have them present, from one
// present-page bitmap per process (bit i: page i of the file, as the residency tier reads it from
// pagemap): a page present in k of the bitmaps counts 1/k to each, as the kernel's PSS divides a
// page by its map count. Only the bitmaps given divide: a sharer outside them (a process outside
// the tree) is not seen, so the shares are then too large (see docs/figures.md).
#pragma once

#include <cstdint>
#include <vector>

namespace loaderlens {

// Pages (fractional) each bitmap's owner holds in proportion. Every bitmap has `words` words.
std::vector<double> proportional_pages(const std::vector<const std::uint64_t*>& bitmaps,
                                       std::size_t words);

} // namespace loaderlens
