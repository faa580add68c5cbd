// SPDX-License-Identifier: MIT
#include "view_export.hpp"

#include "dashboard_view.hpp"
#include "loaderlens/output_rule.hpp"
#include "qcustomplot_include.hpp"

#include <memory>
#include <QBuffer>
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

bool export_view_to(DashboardView* view, const QString& path, QString* error,
                    const QString& recording) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != "png" && suffix != "pdf" && suffix != "svg") {
        *error = path + ": unknown format '" + suffix + "' (png, pdf or svg)";
        return false;
    }
    InputFiles inputs;
    if (!recording.isEmpty()) inputs.add_recording(recording.toStdString());
    std::unique_ptr<WholeOutput> output;
    try {
        output = std::make_unique<WholeOutput>(path.toStdString(), path.toStdString(), inputs);
    } catch (const OutputRuleError& e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    // Drawn into memory, then written through the rule's descriptor: never reopened by name.
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    QCustomPlot* plot = view->plot();
    const QSize size = plot ? plot->size() : view->size();
    bool ok = false;
    if (suffix == "png") {
        ok = plot ? plot->toPixmap(size.width(), size.height()).save(&buffer, "PNG")
                  : view->grab().save(&buffer, "PNG");
    } else if (suffix == "pdf") {
        QPdfWriter pdf(&buffer);
        pdf.setTitle("loaderlens " + view->title());
        pdf.setResolution(96);
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setPageSize(QPageSize(QSizeF(size.width(), size.height()), QPageSize::Point));
        if (plot) {
            QCPPainter painter;
            if (painter.begin(&pdf)) {
                plot->toPainter(&painter, size.width(), size.height());
                ok = painter.end();
            }
        } else {
            ok = render_widget(view, &pdf);
        }
    } else {
        QSvgGenerator svg;
        svg.setOutputDevice(&buffer);
        svg.setTitle("loaderlens " + view->title());
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
    }
    if (!ok) {
        *error = path + ": could not be drawn";
        return false;
    }
    if (auto problem = output->commit(output->write(bytes.toStdString()))) {
        *error = QString::fromStdString(*problem);
        return false;
    }
    return true;
}

} // namespace loaderlens::gui
