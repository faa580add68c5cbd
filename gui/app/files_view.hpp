// SPDX-License-Identifier: MIT
// Files: each mapped file with the tree's peak Σ RSS and Σ PSS of it; for the file picked, each
// worker slot's (and main's) RSS and PSS of it over time, from the maps tier. A data file whose
// Σ RSS is k times its Σ PSS is held by k processes at once: counted k times by RSS.
#pragma once

#include "dashboard_view.hpp"
#include "envelope.hpp"
#include "file_table_model.hpp"
#include "plot_frame.hpp"

#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <vector>

namespace loaderlens::gui {

class FilesView : public DashboardView {
    Q_OBJECT
  public:
    FilesView(const ViewContext& context, QWidget* parent);
    QString name() const override { return "files"; }
    QString title() const override { return "Files"; }
    void refresh() override;
    QCustomPlot* plot() override { return plot_; }

  private:
    void show_file(std::int64_t object_id, const QString& path);
    void redraw();

    struct Line {
        QString name;
        bool pss = false;
        int color = 0;
        std::vector<LanePoint> points;
        std::vector<TimeSpan> gaps; // between generations: no process of the lane alive
        QCPGraph* graph = nullptr;
    };
    QCustomPlot* plot_ = nullptr;
    PlotFrame* frame_ = nullptr;
    FileTableModel* model_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTableView* table_ = nullptr;
    QLabel* caption_ = nullptr;
    std::vector<Line> lines_;
    std::int64_t object_id_ = 0;
    const ReportData* shown_ = nullptr;
};

} // namespace loaderlens::gui
