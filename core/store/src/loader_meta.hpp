// SPDX-License-Identifier: MIT
// The reference loader's config, status and message, kept in meta (private to the store layer).
#pragma once

#include "loaderlens/recording_data.hpp"

#include <string>

namespace loaderlens {

// Copies meta loader.config, loader.status and loader.message of `data.meta` into data.loader.
// A config that is not a JSON object within bounds is damage: RecordingError naming `path`.
void take_loader_meta(const std::string& path, RecordingData& data);

} // namespace loaderlens
