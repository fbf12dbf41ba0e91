/// A card on a surface: where it stands, its corner radius and the padding around its content.
typealias CardBox = (x: Double, width: Double, radius: Double, padding: Double)

/// A picture a surface shows: its URL and the decoded bitmap, or why it could not be read.
typealias LoadedPicture = (url: String, bitmap: Bitmap?, problem: String?)

extension PreviewRenderer {
    /// The picture at `url`, decoded; why it could not be read goes to `notes` too.
    func loadPicture(_ url: String, notes: inout [String]) -> LoadedPicture {
        let (bitmap, problem) = bitmap(for: url)
        if let problem { notes.append(Self.imageNote(url, problem)) }
        return (url, bitmap, problem)
    }

    /// How Android's shade and Chrome's notification open: the card's content inset by its padding,
    /// whether it is expanded, and the square icon right of the title and body (loaded, a problem
    /// noted), which narrows the text beside it by its size and a gap of 12.
    func openCard(
        _ card: CardBox, state: PreviewState, iconURL: String?, iconSize: Double, notes: inout [String]
    ) -> (left: Double, contentWidth: Double, expanded: Bool, icon: LoadedPicture?, textWidth: Double) {
        let left = card.x + card.padding
        let contentWidth = card.width - 2 * card.padding
        let icon = iconURL.map { loadPicture($0, notes: &notes) }
        return (left, contentWidth, state == .expanded, icon, contentWidth - (icon != nil ? iconSize + 12 : 0))
    }
}
