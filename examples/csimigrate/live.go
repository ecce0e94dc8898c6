package main

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// readLive lists PVs, StorageClasses, pods and secrets of a live cluster
// into sink, page by page (500 objects a request), so memory does not grow
// with the cluster beyond what the sink keeps. Secrets are only read when
// withSecrets is set (reading them needs the right to).
func readLive(ctx context.Context, c kubernetes.Interface, sink Sink, withSecrets bool, progress func(int), stderr io.Writer) error {
	list := func(what string, page func(opts metav1.ListOptions) (string, int, error)) error {
		opts := metav1.ListOptions{Limit: 500}
		for {
			cont, n, err := page(opts)
			if err != nil {
				return fmt.Errorf("listing %s: %w", what, err)
			}
			progress(n)
			if cont == "" {
				return nil
			}
			opts.Continue = cont
		}
	}
	if err := list("persistentvolumes", func(o metav1.ListOptions) (string, int, error) {
		l, err := c.CoreV1().PersistentVolumes().List(ctx, o)
		if err != nil {
			return "", 0, err
		}
		for i := range l.Items {
			sink.Add(&l.Items[i])
		}
		return l.Continue, len(l.Items), nil
	}); err != nil {
		return err
	}
	if err := list("storageclasses", func(o metav1.ListOptions) (string, int, error) {
		l, err := c.StorageV1().StorageClasses().List(ctx, o)
		if err != nil {
			return "", 0, err
		}
		for i := range l.Items {
			sink.Add(&l.Items[i])
		}
		return l.Continue, len(l.Items), nil
	}); err != nil {
		return err
	}
	if err := list("csinodes", func(o metav1.ListOptions) (string, int, error) {
		l, err := c.StorageV1().CSINodes().List(ctx, o)
		if err != nil {
			return "", 0, err
		}
		for i := range l.Items {
			sink.Add(&l.Items[i])
		}
		return l.Continue, len(l.Items), nil
	}); err != nil {
		return err
	}
	if err := list("pods", func(o metav1.ListOptions) (string, int, error) {
		l, err := c.CoreV1().Pods("").List(ctx, o)
		if err != nil {
			return "", 0, err
		}
		for i := range l.Items {
			sink.Add(&l.Items[i])
		}
		return l.Continue, len(l.Items), nil
	}); err != nil {
		return err
	}
	if !withSecrets {
		fmt.Fprintln(stderr, "secrets not read (-read-secrets=false): secret fixes are not checked")
		return nil
	}
	return list("secrets", func(o metav1.ListOptions) (string, int, error) {
		l, err := c.CoreV1().Secrets("").List(ctx, o)
		if err != nil {
			return "", 0, err
		}
		for i := range l.Items {
			sink.Add(&l.Items[i])
		}
		return l.Continue, len(l.Items), nil
	})
}
