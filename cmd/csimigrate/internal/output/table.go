package output

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// A plan's table is read in a terminal: by default each table has short
// columns and the long texts (reasons, remedies, notes) follow it, wrapped,
// one block per row; -o wide puts them in the table as columns.

// TextWidth is where the long texts of the default table wrap.
const TextWidth = 120

// table is one table of the plan: a title, the columns and rows of short
// cells, and per row its long texts (label, text).
type table struct {
	title   string
	columns []string
	rows    [][]string
	texts   [][][2]string
}

func (t *table) add(cells []string, texts ...[2]string) {
	t.rows = append(t.rows, cells)
	t.texts = append(t.texts, texts)
}

// write writes the table: in wide form with one column per text label,
// else with the texts below it, each row's as a block.
func (t *table) write(w io.Writer, wide bool, textColumns ...string) {
	if len(t.rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, t.title)
	cols := t.columns
	if wide {
		cols = append(slices.Clone(cols), textColumns...)
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for i, r := range t.rows {
		cells := r
		if wide {
			cells = slices.Clone(r)
			for _, txt := range t.texts[i] {
				cells = append(cells, dash(txt[1]))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	if wide {
		return
	}
	first := true
	for i, r := range t.rows {
		for j, txt := range t.texts[i] {
			if txt[1] == "" {
				continue
			}
			if first {
				fmt.Fprintln(w)
				first = false
			}
			// The row's first text names the row; the others follow it.
			label := "    " + txt[0]
			if j == 0 {
				label = strings.TrimSpace("  " + r[0] + " " + txt[0])
				label = "  " + label
			}
			fmt.Fprint(w, Wrap(label+": "+txt[1], TextWidth, "      "))
		}
	}
}

// wrap breaks s at spaces into lines of at most width bytes where it can,
// each after the first starting with indent; it ends with a newline.
func Wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Split(s, " ") {
		switch {
		case i == 0:
		case line+1+len(word) > width && line > len(indent):
			b.WriteString("\n" + indent)
			line = len(indent)
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	b.WriteByte('\n')
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
