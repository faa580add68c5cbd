// SPDX-License-Identifier: MIT
// Text from outside (a file name, SQLite's message, a stored value) made fit for one line of a
// message, the same way everywhere: the CLI's error line, RecordingError, the GUI's status bar,
// and every name the text outputs print (report, check, merge's report).
#pragma once

#include <string>
#include <string_view>

namespace loaderlens {

// `text` with its control characters escaped: a newline as \n, a tab as \t, any other byte below
// 0x20 and DEL as \xNN, a C1 control (U+0080 to U+009F) as \u00NN; each ill-formed UTF-8
// sequence replaced by U+FFFD, as report --json and the dashboard show it. Well-formed UTF-8 is
// kept, so a name reads as it is.
std::string one_line(std::string_view text);

} // namespace loaderlens
