// Package attachmentstest makes files for the tests of attachments.
package attachmentstest

import (
	"fmt"
	"strings"
)

// PDF is a well-formed PDF of one page per text, each showing its text in
// Helvetica, with the cross-reference table a PDF reader needs.
func PDF(pages ...string) []byte {
	var b strings.Builder
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n")
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	obj("<</Type/Catalog/Pages 2 0 R>>")
	obj(fmt.Sprintf("<</Type/Pages/Kids[%s]/Count %d>>", strings.Join(kids, " "), len(pages)))
	obj("<</Type/Font/Subtype/Type1/BaseFont/Helvetica/Encoding/WinAnsiEncoding>>")
	for i, text := range pages {
		stream := "BT /F1 12 Tf 20 50 Td (" + text + ") Tj ET"
		obj(fmt.Sprintf("<</Type/Page/Parent 2 0 R/MediaBox[0 0 400 100]/Contents %d 0 R/Resources<</Font<</F1 3 0 R>>>>>>", 5+2*i))
		obj(fmt.Sprintf("<</Length %d>>\nstream\n%s\nendstream", len(stream), stream))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return []byte(b.String())
}
