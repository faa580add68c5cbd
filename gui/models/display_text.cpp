// SPDX-License-Identifier: MIT
#include "display_text.hpp"

#include "loaderlens/one_line.hpp"
#include "loaderlens/units.hpp"

#include <algorithm>
#include <sys/wait.h>

namespace loaderlens::gui {

QString recorded_text(std::string_view text, int max_chars) {
    // An escaped byte takes at most 6 characters (\u00NN), a character at most 4 bytes.
    const std::size_t looked_at =
        std::min(text.size(), static_cast<std::size_t>(max_chars) * 4 + 4);
    const QString shown = QString::fromStdString(one_line(text.substr(0, looked_at)));
    if (shown.size() <= max_chars && looked_at == text.size()) return shown;
    return shown.left(max_chars) + QString("… (%1 bytes)").arg(text.size());
}

QString kib_text(const Kib& kib) {
    return QString::fromStdString(format_kib(kib));
}

QString seconds_text(std::int64_t ms) {
    return QString::number(ms / 1000.0, 'f', 1) + " s";
}

QString exit_text(const std::optional<int>& status) {
    if (!status) return "not seen";
    if (WIFSIGNALED(*status)) return QString("killed by signal %1").arg(WTERMSIG(*status));
    if (WIFEXITED(*status)) return QString("exit %1").arg(WEXITSTATUS(*status));
    return QString("status %1").arg(*status);
}

qlonglong sort_value(const Kib& kib) {
    return kib ? static_cast<qlonglong>(*kib) : -1;
}

QString part_prefix(const RecordingData& data, int part) {
    for (const RecordingPart& p : data.parts)
        if (p.id == part) return recorded_text(p.name) + " · ";
    return {};
}

} // namespace loaderlens::gui
