// SPDX-License-Identifier: MIT
#include "loaderlens/residency.hpp"

#include <algorithm>

namespace loaderlens {

BucketLayout BucketLayout::make(std::int64_t file_pages, int wanted) {
    BucketLayout layout;
    layout.file_pages = std::max<std::int64_t>(file_pages, 0);
    wanted = std::max(wanted, 1);
    layout.bucket_pages = std::max<std::int64_t>(1, (layout.file_pages + wanted - 1) / wanted);
    layout.count =
        static_cast<int>((layout.file_pages + layout.bucket_pages - 1) / layout.bucket_pages);
    return layout;
}

std::int64_t BucketLayout::pages_in(int bucket) const {
    return std::min(bucket_pages, file_pages - first_page(bucket));
}

const char* to_string(CacheMethod method) {
    switch (method) {
    case CacheMethod::cachestat:
        return "cachestat";
    case CacheMethod::mincore:
        return "mincore";
    case CacheMethod::unavailable:
        break;
    }
    return "unavailable";
}

} // namespace loaderlens
