import DigestPreview
import DigestReport

/// `index.html` of a template comparison: the totals, then one section per changed message with each
/// surface's old and new PNG side by side and, under each, its visible lines, the ones that differ
/// from the other side's marked (`li.changed`).
enum ComparisonHTML {
    /// Everything up to the first changed message: the page's head, what was compared, the totals.
    static func head(week: String, old: String, new: String, totals: ComparisonTotals) -> String {
        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>digest — template comparison \(escape(week))</title>
            <style>
              body { font: 14px/1.4 system-ui, Roboto, "Noto Sans", sans-serif; margin: 20px; background: #f6f7f9; color: #202124; }
              table { border-collapse: collapse; background: #fff; }
              td, th { padding: 2px 8px; text-align: left; border-bottom: 1px solid #e8eaed; }
              td.n { text-align: right; font-variant-numeric: tabular-nums; }
              section { background: #fff; border: 1px solid #dadce0; border-radius: 8px; padding: 10px 14px; margin: 16px 0; }
              .pair { display: flex; gap: 18px; flex-wrap: wrap; align-items: flex-start; margin: 8px 0; }
              figure { margin: 0; }
              figcaption { font-size: 12px; color: #5f6368; }
              ol.lines { font-size: 12px; margin: 4px 0; padding-left: 20px; max-width: 376px; }
              li.changed { background: #fce8e6; }
              .new li.changed { background: #e6f4ea; }
              .error { color: #b3261e; }
            </style>
            </head>
            <body>
            <h1>Template comparison, \(escape(week))</h1>
            <p>old: <code>\(escape(old))</code><br>new: <code>\(escape(new))</code></p>
            <table id="totals">
            """
        let rows: [(String, Int)] = [
            ("readers compared", totals.readers), ("user ids not found", totals.missingUsers), ("messages compared", totals.messages),
            ("messages changed", totals.changed), ("messages unchanged (not drawn)", totals.unchanged),
            ("variant switches", totals.variantSwitches), ("texts newly cut with …", totals.newlyCut),
            ("texts no longer cut", totals.noLongerCut), ("budgets newly exceeded", totals.newlyOverBudget),
            ("back within budget", totals.backWithinBudget), ("rules fired differently", totals.rulesChanged),
            ("messages with an error", totals.failed),
            ("messages shaped by the reader's preferences (not the templates)", totals.byPreferences),
            ("readers skipped by their pace or pause", totals.skippedByPreferences),
        ]
        for (label, value) in rows { html += "<tr><th>\(label)</th><td class=\"n\">\(value)</td></tr>\n" }
        html += "</table>\n<h2>Changed messages by locale × variant × platform</h2>\n<table id=\"changed-by\">\n"
        html += "<tr><th>locale</th><th>variant</th><th>platform</th><th>messages</th></tr>\n"
        for group in totals.changedBy {
            html += "<tr><td>\(escape(group.locale))</td><td>\(escape(group.variant))</td><td>\(escape(group.platform))</td>"
            html += "<td class=\"n\">\(group.messages)</td></tr>\n"
        }
        return html + "</table>\n"
    }

    static let tail = "</body>\n</html>\n"

    /// One changed message.
    static func section(_ entry: ComparisonEntry, number: Int) -> String {
        let variants = [entry.old?.variant, entry.new?.variant].map { $0 ?? "none" }
        var html = "<section id=\"m\(number)\"><h2>\(escape(entry.user))"
        for part in [entry.platform, entry.locale].compactMap({ $0 }) { html += " · \(escape(part))" }
        html += " · \(escape(variants[0] == variants[1] ? variants[0] : "\(variants[0]) → \(variants[1])"))</h2>\n"
        html += "<p>changed: \(escape(entry.changes.joined(separator: ", ")))</p>\n"
        if let error = entry.error { html += "<p class=\"error\">\(escape(error))</p>\n" }
        let lists: [(String, [String])] = [
            ("newly cut", entry.newlyCut), ("no longer cut", entry.noLongerCut), ("rules added", entry.rulesAdded),
            ("rules removed", entry.rulesRemoved),
        ]
        for (label, items) in lists where !items.isEmpty { html += "<p>\(label): \(escape(items.joined(separator: ", ")))</p>\n" }
        if let old = entry.old?.bytes, let new = entry.new?.bytes, let budget = entry.new?.budget {
            html += "<p>bytes: \(old) → \(new) of \(budget)</p>\n"
        }
        for surface in entry.surfaces {
            html += "<h3>\(escape(surface.surface))</h3>\n<div class=\"pair\">\n"
            for (name, drawing, other) in [("old", surface.old, surface.new), ("new", surface.new, surface.old)] {
                guard let drawing else { continue }
                html += "<figure class=\"\(name)\"><img src=\"\(escape(drawing.image))\" width=\"\(drawing.width)\" height=\"\(drawing.height)\" alt=\"\(name)\">"
                html += "<figcaption>\(name)</figcaption>\n"
                // Texts of a role pair up in order (a surface may draw several actions).
                var seen: [String: Int] = [:]
                for text in drawing.texts where text.role != "note" {
                    let occurrence = seen[text.role, default: 0]
                    seen[text.role] = occurrence + 1
                    let sameRole = other?.texts.filter { $0.role == text.role } ?? []
                    let others = occurrence < sameRole.count ? sameRole[occurrence].lines : []
                    html += "<ol class=\"lines\" data-role=\"\(escape(text.role))\">"
                    for (index, line) in text.lines.enumerated() {
                        let changed = index >= others.count || others[index] != line
                        html += "<li\(changed ? " class=\"changed\"" : "")>\(escape(text.role)): \(escape(line))</li>"
                    }
                    html += "</ol>\n"
                }
                html += "</figure>\n"
            }
            html += "</div>\n"
        }
        return html + "</section>\n"
    }

    /// Text and attribute values escaped (the report chart's escaping, which HTML reads alike).
    static func escape(_ text: String) -> String { ReportChart.escape(text) }
}
