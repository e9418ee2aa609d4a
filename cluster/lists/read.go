package lists

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
)

// ReadNodes reads a node list in either form the package knows: its JSON
// form (File: a name ending in .json, any case, or content starting with
// "{" or "[") or an openb CSV file. Every reader of node lists goes
// through it, so the CLI and the experiments tell the forms apart the same
// way.
func ReadNodes(r io.Reader, name string) ([]cluster.Node, error) {
	br, isJSON := sniffJSON(r, name)
	if !isJSON {
		return ReadNodesCSV(br, name)
	}
	f, err := ReadJSON(br, name)
	if err != nil {
		return nil, err
	}
	return f.Nodes, nil
}

// ReadPods reads a pod list in either form, as ReadNodes.
func ReadPods(r io.Reader, name string) ([]cluster.Pod, error) {
	br, isJSON := sniffJSON(r, name)
	if !isJSON {
		return ReadPodsCSV(br, name)
	}
	f, err := ReadJSON(br, name)
	if err != nil {
		return nil, err
	}
	return f.Pods, nil
}

// ReadNodesFile reads the node list in file path (ReadNodes); errors name
// the path. The one reader of node-list files, for the commands and the
// experiment suite alike.
func ReadNodesFile(path string) ([]cluster.Node, error) { return readFile(path, ReadNodes) }

// ReadPodsFile reads the pod list in file path (ReadPods), as
// ReadNodesFile.
func ReadPodsFile(path string) ([]cluster.Pod, error) { return readFile(path, ReadPods) }

func readFile[T any](path string, read func(io.Reader, string) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path)
}

// sniffBytes is how far sniffJSON looks for the first byte that is not
// white space (512 bytes, as HTTP content sniffing does).
const sniffBytes = 512

// sniffJSON tells whether the input is in the JSON form, by its name or
// its first byte that is not white space, and returns a reader of the
// whole input.
func sniffJSON(r io.Reader, name string) (*bufio.Reader, bool) {
	br := bufio.NewReader(r)
	if strings.EqualFold(path.Ext(name), ".json") {
		return br, true
	}
	head, _ := br.Peek(sniffBytes) // a short or failing read is the readers' to report
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\uFEFF")), " \t\r\n")
	return br, len(head) > 0 && (head[0] == '{' || head[0] == '[')
}
