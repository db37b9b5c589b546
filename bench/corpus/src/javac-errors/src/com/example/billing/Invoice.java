package com.example.billing;

import java.util.ArrayList;
import java.util.List;

public class Invoice {
    private final String customer;
    private final List<LineItem> items = new ArrayList<>();

    public Invoice(String customer) {
        this.customer = customer;
    }

    public void add(String description, int quantity, long unitCents) {
        items.add(new LineItem(description, quantity, unitCents));
    }

    public long totalCents() {
        long total = 0;
        for (LineItem item : items) {
            total += item.subtotal();
        }
        return total;
    }

    public String summary() {
        int count = items.size();
        String total = totalCents();
        return customer + ": " + count + " items, " + Money.format(total);
    }

    public List<LineItem> getItems() {
        return items;
    }
}
