// SPDX-License-Identifier: MIT
#include "loaderlens/loader_run.hpp"

namespace loaderlens {

double LoaderEpoch::samples_per_second() const {
    return seconds() > 0 ? static_cast<double>(samples) / seconds() : 0.0;
}

double LoaderEpoch::mib_per_second() const {
    return seconds() > 0 ? static_cast<double>(bytes_read) / (1 << 20) / seconds() : 0.0;
}

} // namespace loaderlens
