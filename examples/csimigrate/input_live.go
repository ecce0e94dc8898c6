package main

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// addAll hands every item of a page to the sink and returns how many.
func addAll[T any](sink Sink, items []T) int {
	for i := range items {
		sink.Add(any(&items[i]))
	}
	return len(items)
}

// readLive lists PVs, StorageClasses, CSINodes, pods and secrets of a live
// cluster into sink, page by page (500 objects a request), so memory does
// not grow with the cluster beyond what the sink keeps. Secrets are only
// read when withSecrets is set (reading them needs the right to).
func readLive(ctx context.Context, c kubernetes.Interface, sink Sink, withSecrets bool, progress func(int), stderr io.Writer) error {
	type page func(metav1.ListOptions) (cont string, n int, err error)
	sources := []struct {
		what string
		page page
	}{
		{"persistentvolumes", func(o metav1.ListOptions) (string, int, error) {
			l, err := c.CoreV1().PersistentVolumes().List(ctx, o)
			if err != nil {
				return "", 0, err
			}
			return l.Continue, addAll(sink, l.Items), nil
		}},
		{"storageclasses", func(o metav1.ListOptions) (string, int, error) {
			l, err := c.StorageV1().StorageClasses().List(ctx, o)
			if err != nil {
				return "", 0, err
			}
			return l.Continue, addAll(sink, l.Items), nil
		}},
		{"csinodes", func(o metav1.ListOptions) (string, int, error) {
			l, err := c.StorageV1().CSINodes().List(ctx, o)
			if err != nil {
				return "", 0, err
			}
			return l.Continue, addAll(sink, l.Items), nil
		}},
		{"pods", func(o metav1.ListOptions) (string, int, error) {
			l, err := c.CoreV1().Pods("").List(ctx, o)
			if err != nil {
				return "", 0, err
			}
			return l.Continue, addAll(sink, l.Items), nil
		}},
	}
	if withSecrets {
		sources = append(sources, struct {
			what string
			page page
		}{"secrets", func(o metav1.ListOptions) (string, int, error) {
			l, err := c.CoreV1().Secrets("").List(ctx, o)
			if err != nil {
				return "", 0, err
			}
			return l.Continue, addAll(sink, l.Items), nil
		}})
	} else {
		fmt.Fprintln(stderr, "secrets not read (-read-secrets=false): secret fixes are not checked")
	}
	for _, src := range sources {
		opts := metav1.ListOptions{Limit: 500}
		for {
			cont, n, err := src.page(opts)
			if err != nil {
				return fmt.Errorf("listing %s: %w", src.what, err)
			}
			progress(n)
			if cont == "" {
				break
			}
			opts.Continue = cont
		}
	}
	return nil
}
