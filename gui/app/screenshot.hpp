// SPDX-License-Identifier: MIT
// `loaderlens-gui --screenshot OUT.png [--view NAME|all] [--size WxH] RECORDING`: renders the
// window as a user would see it, without a display (QT_QPA_PLATFORM=offscreen is set unless a
// platform was chosen), for reports and tests. --view all writes OUT-NAME.png for every view.
#pragma once

#include <QSize>
#include <QString>

namespace loaderlens::gui {

struct ScreenshotRequest {
    QString recording, output, view = "overview";
    QSize size{1600, 1000};
};

// Exit status: 0 written; 2 the recording cannot be read or the view is unknown (one line on
// stderr naming it); 1 the picture could not be written.
int take_screenshot(const ScreenshotRequest& request);

} // namespace loaderlens::gui
