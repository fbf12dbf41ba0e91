import CPangoCairo

/// The iOS lock screen (iOS 16+): a notification on the wallpaper, collapsed with a thumbnail of the
/// attachment, expanded (long press) with the attachment at its aspect above the full text; in pt.
extension PreviewRenderer {
    enum IOS {
        /// Inter stands in for SF Pro, which cannot be shipped.
        static let families = "Inter, Noto Sans, Noto Naskh Arabic, Noto Sans Hebrew, Noto Sans CJK SC"
        static let canvasWidth = 375.0
        static let card = (x: 16.0, width: 343.0, radius: 22.0, padding: 14.0)
        static let title = TextStyle(families: families, weight: .semibold, size: 15, lineHeight: 20, color: Color(hex: 0x000000))
        static let body = TextStyle(families: families, size: 15, lineHeight: 20, color: Color(hex: 0x000000))
        static let time = TextStyle(families: families, size: 13, lineHeight: 20, color: Color(hex: 0x3C3C43, alpha: 0.6))
        static let appIcon = 38.0
        static let thumbnail = 38.0
        /// The action list under a long-pressed notification: iOS's menu, a rounded list of rows.
        static let actionList = (width: 250.0, radius: 13.0, row: 44.0, gap: 8.0, padding: 16.0)
        static let action = TextStyle(families: families, size: 17, lineHeight: 22, color: Color(hex: 0x000000))
        static let destructive = Color(hex: 0xFF3B30)
    }

    /// The buttons iOS lists under `content` expanded: its category's registered actions
    /// (``Configuration/iosCategories``), or, for content made without a category, its `actions`
    /// (none destructive). A category the renderer does not know draws none, with a note.
    func iosActions(_ content: NotificationContent, notes: inout [String]) -> [PreviewAction] {
        guard let category = content.category else {
            return content.actions.map { PreviewAction(id: $0, title: $0) }
        }
        if let registered = configuration.iosCategories[category] { return registered }
        notes.append("aps.category \"\(category)\" is not a category the preview knows: its buttons are not drawn")
        return []
    }

    func iosScene(_ content: NotificationContent, state: PreviewState, limits: TextLimits) -> Scene {
        var notes: [String] = []
        let card = IOS.card
        let expanded = state == .expanded
        let picture = content.imageURL.map { loadPicture($0, notes: &notes) }
        var y = 8.0
        let cardTop = y
        // Expanded: the attachment across the card at its own aspect (kept within 1:3 … 3:2).
        var attachmentRect: Rect?
        if expanded, let picture {
            let aspect = picture.bitmap.map { Double($0.height) / Double($0.width) } ?? 0.5
            attachmentRect = Rect(x: card.x, y: y, width: card.width, height: (card.width * min(1.5, max(0.33, aspect))).rounded())
            y = attachmentRect!.maxY
        }
        y += card.padding
        let textX = card.x + card.padding + IOS.appIcon + 10
        let right = card.x + card.width - card.padding
        let hasThumbnail = !expanded && picture != nil
        let textWidth = right - textX - (hasThumbnail ? IOS.thumbnail + 10 : 0)
        let time = block("now", IOS.time, width: 40, lines: 1, role: "time")
        let timeWidth = time.inkWidth
        let textTop = y
        let title = content.title.flatMap { $0.isEmpty ? nil : $0 }.map {
            block($0, IOS.title, width: right - textX - timeWidth - 8, lines: limits.titleLines, role: "title")
        }
        if let title { y += title.height }
        let subtitle = content.subtitle.flatMap { $0.isEmpty ? nil : $0 }.map {
            block($0, IOS.title, width: textWidth, lines: 1, role: "subtitle")
        }
        let subtitleTop = y
        if let subtitle { y += subtitle.height }
        let bodyTop = y
        let body = (content.body ?? "").isEmpty ? nil : block(content.body!, IOS.body, width: textWidth, lines: limits.bodyLines, role: "body")
        if let body {
            y += body.height
            if expanded, body.lines.ellipsized, body.lines.fullLineCount > limits.bodyLines {
                notes.append("body runs past \(limits.bodyLines) lines: the preview stops there, the device shows all of it")
            }
        }
        y = max(y, textTop + IOS.appIcon)
        y += card.padding
        let cardRect = Rect(x: card.x, y: cardTop, width: card.width, height: y - cardTop)
        // Expanded: the category's actions in a list under the notification, `off` in red.
        let list = IOS.actionList
        let actions = expanded ? iosActions(content, notes: &notes) : []
        let actionBlocks = actions.map {
            block($0.title, IOS.action, width: list.width - 2 * list.padding, lines: 1, role: "action")
        }
        var listRect: Rect?
        if !actions.isEmpty {
            listRect = Rect(x: card.x, y: cardRect.maxY + list.gap, width: list.width, height: Double(actions.count) * list.row)
        }
        let bottom = listRect?.maxY ?? cardRect.maxY

        var texts: [TextLines] = []
        if let title { texts.append(title.lines) }
        if let subtitle { texts.append(subtitle.lines) }
        if let body { texts.append(body.lines) }
        texts.append(contentsOf: actionBlocks.map(\.lines))
        let appName = configuration.appName
        return Scene(
            width: IOS.canvasWidth, height: bottom + 12, background: Color(hex: 0x6B7A99), texts: texts, notes: notes
        ) { canvas in
            canvas.verticalGradient(Rect(x: 0, y: 0, width: canvas.width, height: canvas.height), top: Color(hex: 0x4A5A7E), bottom: Color(hex: 0xB7C2D6))
            canvas.fill(cardRect, radius: card.radius, color: Color(hex: 0xF5F5F7, alpha: 0.92))
            if let rect = attachmentRect, let (url, bitmap, problem) = picture {
                cairo_save(canvas.cr)
                canvas.roundedRect(cardRect, radius: card.radius)
                cairo_clip(canvas.cr)
                self.drawPicture(url, bitmap, problem: problem, on: canvas, in: rect, radius: 0, cover: true)
                cairo_restore(canvas.cr)
            }
            let icon = Rect(x: card.x + card.padding, y: textTop, width: IOS.appIcon, height: IOS.appIcon)
            canvas.fill(icon, radius: 9, color: Color(hex: 0xE8453C))
            let mark = self.block(String(appName.prefix(1)), TextStyle(families: IOS.families, weight: .bold, size: 20, lineHeight: IOS.appIcon, color: Color(hex: 0xFFFFFF), alignment: PANGO_ALIGN_CENTER), width: IOS.appIcon, lines: 1, role: "mark")
            mark.draw(on: canvas, x: icon.x, y: icon.y)
            time.draw(on: canvas, x: right - timeWidth, y: textTop)
            title?.draw(on: canvas, x: textX, y: textTop)
            subtitle?.draw(on: canvas, x: textX, y: subtitleTop)
            body?.draw(on: canvas, x: textX, y: bodyTop)
            if hasThumbnail, let (url, bitmap, problem) = picture {
                let rect = Rect(x: right - IOS.thumbnail, y: bodyTop, width: IOS.thumbnail, height: IOS.thumbnail)
                self.drawPicture(url, bitmap, problem: problem, on: canvas, in: rect, radius: 8, cover: true)
            }
            if let listRect {
                canvas.fill(listRect, radius: list.radius, color: Color(hex: 0xF5F5F7, alpha: 0.92))
                for (index, (action, text)) in zip(actions, actionBlocks).enumerated() {
                    let rowTop = listRect.y + Double(index) * list.row
                    if index > 0 {
                        canvas.fill(Rect(x: listRect.x, y: rowTop, width: listRect.width, height: 0.5), color: Color(hex: 0x3C3C43, alpha: 0.29))
                    }
                    text.draw(
                        on: canvas, x: listRect.x + list.padding, y: rowTop + (list.row - IOS.action.lineHeight) / 2,
                        color: action.destructive ? IOS.destructive : nil)
                }
            }
        }
    }
}
