// SPDX-License-Identifier: MIT
// A process's share of the followed data files at one residency run: its present pages of them
// (RSS) and their computed PSS (page_sharing.hpp). The rollup tier adds it to the rest of the
// process's last kernel reading to get a composite PSS without walking the data files' page
// tables again (RollupSampler; docs/figures.md).
#pragma once

#include "loaderlens/residency.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace loaderlens {

struct FollowedShare {
    std::int64_t rss_kb = 0, pss_kb = 0;
    std::vector<std::int64_t> file_ids; // sorted: a composite needs the same files as the rest
    bool operator==(const FollowedShare&) const = default;
};
using FollowedShares = std::map<std::int64_t, FollowedShare>; // by process id

// Shares of every process in one run's rows; a process is left out when one of its rows has no
// computed PSS. Sharers outside the tree are not left out: the computed PSS is then too large,
// but a composite is the kernel's reading shifted by the *change* of the share since that
// reading, so at each reading the figure is the kernel's and between readings it is off only by
// the outside sharers' part of the pages faulted in or dropped since.
FollowedShares followed_shares(const std::vector<MappedResidency>& rows, std::int64_t page_kb);

} // namespace loaderlens
