import CPangoCairo
import Foundation

/// A web push notification as Chrome's own notification centre shows it (360 px wide), in CSS px.
extension PreviewRenderer {
    enum Web {
        static let families = "Roboto, Noto Sans, Noto Naskh Arabic, Noto Sans Hebrew, Noto Sans CJK SC"
        static let canvasWidth = 376.0
        static let card = (x: 8.0, width: 360.0, radius: 8.0, padding: 16.0)
        static let accent = Color(hex: 0x1A73E8)
        static let header = TextStyle(families: families, size: 12, lineHeight: 16, color: Color(hex: 0x5F6368))
        static let title = TextStyle(families: families, weight: .medium, size: 13, lineHeight: 20, color: Color(hex: 0x202124))
        static let body = TextStyle(families: families, size: 13, lineHeight: 20, color: Color(hex: 0x5F6368))
        static let action = TextStyle(families: families, weight: .medium, size: 13, lineHeight: 20, color: accent)
        static let icon = 40.0
        /// Chrome's largest image is 1800×900: at most 2:1 tall… it shows it within 360×240.
        static let maxImageHeight = 240.0
    }

    func webScene(_ content: NotificationContent, state: PreviewState, limits: TextLimits) -> Scene {
        var notes: [String] = []
        let card = Web.card
        let (left, contentWidth, expanded, icon, textWidth) = openCard(
            card, state: state, iconURL: content.iconURL, iconSize: Web.icon, notes: &notes)
        var y = 8 + 12.0
        let headerY = y
        let header = block("Chrome · \(configuration.origin) · now", Web.header, width: contentWidth - 50, lines: 1, role: "header")
        y += Web.header.lineHeight + 8
        let textTop = y
        let titleText = Self.platformCut(content.title ?? "", utf16: nil, characters: limits.titleCharacters, what: "title", notes: &notes)
        let title = titleText.isEmpty ? nil : block(titleText, Web.title, width: textWidth, lines: limits.titleLines, role: "title")
        if let title { y += title.height }
        var bodyText = Self.platformCut(content.body ?? "", utf16: nil, characters: limits.bodyCharacters, what: "body", notes: &notes)
        if limits.singleLineBody { bodyText = bodyText.replacingOccurrences(of: "\n", with: " ") }
        let bodyTop = y
        let body = bodyText.isEmpty ? nil : block(bodyText, Web.body, width: textWidth, lines: limits.bodyLines, role: "body")
        if let body { y += body.height }
        if icon != nil { y = max(y, textTop + Web.icon) }

        var imageRect: Rect?
        var image: LoadedPicture?
        if expanded, let url = content.imageURL {
            let loaded = loadPicture(url, notes: &notes)
            image = loaded
            let aspect = loaded.bitmap.map { Double($0.height) / Double($0.width) } ?? 0.5
            y += 12
            imageRect = Rect(x: left, y: y, width: contentWidth, height: min(Web.maxImageHeight, (contentWidth * aspect).rounded()))
            y = imageRect!.maxY
        }
        let actions = expanded ? content.actions.prefix(2).map { block($0.uppercased(), Web.action, width: 150, lines: 1, role: "action") } : []
        let actionsY = y + 8
        if !actions.isEmpty { y = actionsY + 36 }
        y += 14
        let cardRect = Rect(x: card.x, y: 8, width: card.width, height: y - 8)

        var texts = [header.lines]
        if let title { texts.append(title.lines) }
        if let body { texts.append(body.lines) }
        texts.append(contentsOf: actions.map(\.lines))
        return Scene(
            width: Web.canvasWidth, height: cardRect.maxY + 8, background: Color(hex: 0xE8EAED), texts: texts, notes: notes
        ) { canvas in
            canvas.shadow(cardRect, radius: card.radius, strength: 0.08)
            canvas.fill(cardRect, radius: card.radius, color: Color(hex: 0xFFFFFF))
            // Chrome's badge: a small round mark in Chrome's colours.
            let badge = Rect(x: left, y: headerY, width: 16, height: 16)
            canvas.fill(badge, radius: 8, color: Color(hex: 0xDB4437))
            canvas.fill(Rect(x: left + 4, y: headerY + 4, width: 8, height: 8), radius: 4, color: Web.accent)
            header.draw(on: canvas, x: left + 22, y: headerY)
            canvas.chevron(x: cardRect.maxX - card.padding - 8, y: headerY + 8, size: 10, up: expanded, color: Color(hex: 0x5F6368))
            title?.draw(on: canvas, x: left, y: textTop)
            body?.draw(on: canvas, x: left, y: bodyTop)
            if let (url, bitmap, problem) = icon {
                let rect = Rect(x: cardRect.maxX - card.padding - Web.icon, y: textTop, width: Web.icon, height: Web.icon)
                self.drawPicture(url, bitmap, problem: problem, on: canvas, in: rect, radius: 4, cover: true)
            }
            if let rect = imageRect, let (url, bitmap, problem) = image {
                self.drawPicture(url, bitmap, problem: problem, on: canvas, in: rect, radius: 4, cover: true)
            }
            var x = left
            for action in actions {
                action.draw(on: canvas, x: x, y: actionsY + 8)
                x += action.inkWidth + 24
            }
        }
    }
}
