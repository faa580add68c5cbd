// SPDX-License-Identifier: MIT
#include "view_export.hpp"

#include "dashboard_view.hpp"
#include "qcustomplot_include.hpp"

#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

namespace loaderlens::gui {

namespace {

bool render_widget(QWidget* widget, QPaintDevice* device) {
    QPainter painter;
    if (!painter.begin(device)) return false;
    const double sx = static_cast<double>(device->width()) / std::max(1, widget->width());
    const double sy = static_cast<double>(device->height()) / std::max(1, widget->height());
    painter.scale(std::min(sx, sy), std::min(sx, sy));
    widget->render(&painter);
    return painter.end();
}

} // namespace

bool export_view_to(DashboardView* view, const QString& path, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    QCustomPlot* plot = view->plot();
    bool ok = false;
    if (suffix == "png") {
        ok = plot ? plot->savePng(path, plot->width(), plot->height())
                  : view->grab().save(path, "PNG");
    } else if (suffix == "pdf") {
        if (plot) {
            ok = plot->savePdf(path, plot->width(), plot->height());
        } else {
            QPdfWriter pdf(path);
            pdf.setTitle("loaderlens " + view->title());
            pdf.setResolution(96);
            pdf.setPageSize(QPageSize(QSizeF(view->width(), view->height()), QPageSize::Point));
            ok = render_widget(view, &pdf);
        }
    } else if (suffix == "svg") {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setTitle("loaderlens " + view->title());
        const QSize size = plot ? plot->size() : view->size();
        svg.setSize(size);
        svg.setViewBox(QRect(QPoint(0, 0), size));
        if (plot) {
            QCPPainter painter;
            if (painter.begin(&svg)) {
                plot->toPainter(&painter, size.width(), size.height());
                ok = painter.end();
            }
        } else {
            ok = render_widget(view, &svg);
        }
    } else {
        *error = path + ": unknown format '" + suffix + "' (png, pdf or svg)";
        return false;
    }
    if (!ok) *error = path + ": could not be written";
    return ok;
}

} // namespace loaderlens::gui
