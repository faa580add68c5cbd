// SPDX-License-Identifier: MIT
// What every view of the window is: a widget with a stable name (--view NAME, the tab), redrawn
// from the document when it is shown after a change. Views that draw with QCustomPlot hand their
// plot over so an export can be vector (PDF, SVG) rather than a picture of the widget.
#pragma once

#include "recording_document.hpp"
#include "time_window.hpp"

#include <QString>
#include <QWidget>

class QCustomPlot;

namespace loaderlens::gui {

struct ViewContext {
    RecordingDocument* document = nullptr;
    TimeWindow* window = nullptr;
    Selection* selection = nullptr;
};

class DashboardView : public QWidget {
    Q_OBJECT
  public:
    DashboardView(const ViewContext& context, QWidget* parent)
        : QWidget(parent), context_(context) {}
    virtual QString name() const = 0;  // "overview", "workers"... (--view NAME)
    virtual QString title() const = 0; // its tab's text
    // The document changed (opened, grew, report ready): draw it again.
    virtual void refresh() = 0;
    virtual QCustomPlot* plot() { return nullptr; }
    // Views that draw lanes: how many there are (tests count them).
    virtual int lane_count() const { return 0; }

  signals:
    // Asks the window to show another view (a finding clicked in the Overview).
    void show_view(const QString& name);

  protected:
    ViewContext context_;
    const RecordingDocument& document() const { return *context_.document; }
};

} // namespace loaderlens::gui
