// SPDX-License-Identifier: MIT
#include "loaderlens/followed_share.hpp"

#include <algorithm>
#include <set>

namespace loaderlens {

FollowedShares followed_shares(const std::vector<MappedResidency>& rows, std::int64_t page_kb) {
    FollowedShares shares;
    std::set<std::int64_t> left_out;
    for (const MappedResidency& row : rows) {
        if (!row.pss_kb) {
            left_out.insert(row.process_id);
            continue;
        }
        FollowedShare& share = shares[row.process_id];
        share.rss_kb += row.present_pages * page_kb;
        share.pss_kb += *row.pss_kb;
        share.file_ids.push_back(row.file_id);
    }
    for (std::int64_t id : left_out)
        shares.erase(id);
    for (auto& [id, share] : shares)
        std::sort(share.file_ids.begin(), share.file_ids.end());
    return shares;
}

} // namespace loaderlens
