import CPangoCairo

/// A colour, components 0…1.
struct Color: Sendable, Hashable {
    var red: Double
    var green: Double
    var blue: Double
    var alpha: Double = 1

    init(hex: UInt32, alpha: Double = 1) {
        red = Double((hex >> 16) & 0xFF) / 255
        green = Double((hex >> 8) & 0xFF) / 255
        blue = Double(hex & 0xFF) / 255
        self.alpha = alpha
    }
}

/// A font and line rhythm for one kind of text on a surface.
struct TextStyle: Sendable, Hashable {
    enum Weight: Sendable, Hashable {
        case regular, medium, semibold, bold
        var pango: PangoWeight {
            switch self {
            case .regular: PANGO_WEIGHT_NORMAL
            case .medium: PANGO_WEIGHT_MEDIUM
            case .semibold: PANGO_WEIGHT_SEMIBOLD
            case .bold: PANGO_WEIGHT_BOLD
            }
        }
    }

    /// Comma-separated families; Pango falls back through them, then through fontconfig. Noto Color
    /// Emoji is left to fontconfig's fallback on purpose: named in the list, Pango 1.50 takes it for
    /// digits and the spaces around them (they have the Emoji property), which then draw far apart.
    var families: String
    var weight: Weight = .regular
    /// Pixels at 1×.
    var size: Double
    /// A fixed line height (pixels at 1×) keeps the platform's rhythm when CJK or emoji lines are taller.
    var lineHeight: Double
    var color: Color
    var alignment: PangoAlignment = PANGO_ALIGN_LEFT
}

/// The lines a text shows on a surface: what is visible, and whether it was cut with "…".
package struct TextLines: Sendable, Hashable, Codable {
    /// `title`, `subtitle`, `body`, `header`, `action`, `note`.
    package var role: String
    /// Lines the surface allows.
    package var limit: Int
    /// Each visible line's text, as laid out (the last ends in "…" when cut).
    package var lines: [String]
    /// Whether the text was cut at the limit.
    package var ellipsized: Bool
    /// Lines the whole text would take without a limit (at most the pre-cut the renderer makes).
    package var fullLineCount: Int
}

/// One laid-out text: a Pango layout owned for its lifetime, with its visible lines.
///
/// Lines beyond the limit are cut the way a platform's ellipsizing text view does: lay the text out,
/// cut after the last visible line, append "…", and take graphemes off until it fits again.
final class TextBlock {
    let layout: OpaquePointer
    let style: TextStyle
    let width: Double
    private(set) var lines: TextLines

    /// The laid-out height in pixels at 1×.
    var height: Double { Double(max(1, lines.lines.count)) * style.lineHeight }

    /// The widest line, in pixels at 1×.
    var inkWidth: Double {
        var logical = PangoRectangle()
        pango_layout_get_extents(layout, nil, &logical)
        return Double(logical.width) / Double(PANGO_SCALE)
    }

    init(
        context: OpaquePointer, text: String, style: TextStyle, width: Double, maxLines: Int, role: String
    ) {
        self.style = style
        self.width = width
        layout = pango_layout_new(context)
        let description = pango_font_description_new()
        pango_font_description_set_family(description, style.families)
        pango_font_description_set_weight(description, style.weight.pango)
        pango_font_description_set_absolute_size(description, style.size * Double(PANGO_SCALE))
        pango_layout_set_font_description(layout, description)
        pango_font_description_free(description)
        pango_layout_set_width(layout, Int32(width * Double(PANGO_SCALE)))
        pango_layout_set_wrap(layout, PANGO_WRAP_WORD_CHAR)
        pango_layout_set_alignment(layout, style.alignment)
        let attributes = pango_attr_list_new()
        pango_attr_list_insert(attributes, pango_attr_line_height_new_absolute(Int32(style.lineHeight * Double(PANGO_SCALE))))
        pango_attr_list_insert(attributes, pango_attr_insert_hyphens_new(0))
        pango_layout_set_attributes(layout, attributes)
        pango_attr_list_unref(attributes)

        let limit = max(1, maxLines)
        // A line holds far fewer than 160 graphemes at these widths, so a longer text is cut anyway:
        // laying out only a prefix keeps a 10,000-character body cheap.
        var source = text
        let bound = limit * 160
        var preCut = false
        if source.utf8.count > bound, source.count > bound {
            source = String(source.prefix(bound))
            preCut = true
        }
        Self.setText(layout, source)
        let full = Int(pango_layout_get_line_count(layout))
        var ellipsized = false
        if full > limit {
            ellipsized = true
            let bytes = Array(source.utf8)
            let end = Int(cpc_line_start(layout, Int32(limit - 1)) + cpc_line_length(layout, Int32(limit - 1)))
            var prefix = String(decoding: bytes[..<min(end, bytes.count)], as: UTF8.self)
            Self.trimEnd(&prefix)
            for _ in 0..<64 {
                Self.setText(layout, prefix + "…")
                if Int(pango_layout_get_line_count(layout)) <= limit || prefix.isEmpty { break }
                prefix.removeLast()
                Self.trimEnd(&prefix)
            }
        }
        lines = TextLines(
            role: role, limit: limit, lines: [], ellipsized: ellipsized || preCut && full > limit,
            fullLineCount: full)
        lines.lines = Self.visibleLines(layout)
    }

    deinit { cpc_object_unref(UnsafeMutableRawPointer(layout)) }

    /// Draws the text with its top-left corner at (`x`, `y`) in the canvas's 1× units.
    func draw(on canvas: Canvas, x: Double, y: Double, color: Color? = nil) {
        let color = color ?? style.color
        cairo_set_source_rgba(canvas.cr, color.red, color.green, color.blue, color.alpha)
        cairo_move_to(canvas.cr, x, y)
        pango_cairo_show_layout(canvas.cr, layout)
    }

    private static func setText(_ layout: OpaquePointer, _ text: String) {
        pango_layout_set_text(layout, text, -1)
    }

    private static func trimEnd(_ text: inout String) {
        while let last = text.last, last.isWhitespace || last.isNewline || ",;:·-–—".contains(last) {
            text.removeLast()
        }
    }

    private static func visibleLines(_ layout: OpaquePointer) -> [String] {
        guard let text = pango_layout_get_text(layout) else { return [] }
        let count = Int(pango_layout_get_line_count(layout))
        let length = strlen(text)
        return text.withMemoryRebound(to: UInt8.self, capacity: length) { base in
            let bytes = UnsafeBufferPointer(start: base, count: length)
            return (0..<count).map { index in
                let start = Int(cpc_line_start(layout, Int32(index)))
                let end = min(length, start + Int(cpc_line_length(layout, Int32(index))))
                guard start >= 0, start <= end else { return "" }
                var line = String(decoding: bytes[start..<end], as: UTF8.self)
                while let last = line.last, last.isNewline || last == " " { line.removeLast() }
                return line
            }
        }
    }
}
