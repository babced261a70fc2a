#!/usr/bin/env python3
"""Writes catalog.json, the search relevance fixture: a cafe, grocery and retail catalog.

Deterministic (no randomness): names, descriptions and categories are curated below; ids, SKUs
and check-digit-valid UPC-A codes are derived from them. Run from this directory.
"""
import json, re, unicodedata

DRINK = [("Small", "12"), ("Medium", "16"), ("Large", "20")]
CATEGORIES = {
    "Coffee": ("COF", "drink", [
        ("Espresso", "A double shot of our house espresso blend."),
        ("Americano", "Espresso topped with hot water."),
        ("Cappuccino", "Espresso with steamed milk and a thick layer of foam."),
        ("Caffè Latte", "Espresso with steamed milk and a light layer of foam."),
        ("Flat White", "Ristretto shots with velvety microfoam."),
        ("Cortado", "Espresso cut with an equal amount of warm milk."),
        ("Caffè Mocha", "Espresso, chocolate sauce and steamed milk, topped with whipped cream."),
        ("Caramel Macchiato", "Vanilla syrup, steamed milk, espresso and caramel drizzle."),
        ("Vanilla Latte", "Latte sweetened with Madagascar vanilla syrup."),
        ("Hazelnut Latte", "Latte with roasted hazelnut syrup."),
        ("Oat Milk Latte", "Espresso with steamed oat milk."),
        ("Pumpkin Spice Latte", "Seasonal latte with pumpkin, cinnamon and nutmeg."),
        ("Café au Lait", "Drip coffee with steamed milk."),
        ("Drip Coffee", "Freshly brewed house coffee, refilled all day."),
        ("Pour Over", "Single origin coffee brewed by hand."),
        ("Irish Coffee", "Coffee with Irish cream syrup, no alcohol."),
        ("Affogato", "Vanilla gelato drowned in a shot of espresso."),
        ("Décaf Americano", "Swiss water decaf espresso with hot water."),
    ]),
    "Tea": ("TEA", "drink", [
        ("Earl Grey", "Black tea scented with bergamot."),
        ("English Breakfast Tea", "A robust blend of Assam and Ceylon black teas."),
        ("Chai Latte", "Spiced black tea with steamed milk."),
        ("Matcha Latte", "Ceremonial grade matcha whisked with steamed milk."),
        ("Jasmine Green Tea", "Green tea scented with jasmine blossoms."),
        ("Chamomile Tea", "Caffeine free chamomile flowers."),
        ("Peppermint Tea", "Caffeine free peppermint leaves."),
        ("Rooibos Tea", "South African red bush tea, naturally caffeine free."),
        ("London Fog", "Earl Grey tea with vanilla syrup and steamed milk."),
        ("Hojicha Latte", "Roasted green tea with steamed milk."),
    ]),
    "Cold Drinks": ("CLD", "drink", [
        ("Iced Latte", "Espresso and cold milk over ice."),
        ("Cold Brew", "Coffee steeped cold for eighteen hours."),
        ("Nitro Cold Brew", "Cold brew infused with nitrogen for a creamy texture."),
        ("Iced Americano", "Espresso and cold water over ice."),
        ("Frappé", "Blended iced coffee with milk."),
        ("Iced Matcha Latte", "Matcha and cold milk over ice."),
        ("Strawberry Smoothie", "Strawberries, banana and yogurt blended with ice."),
        ("Mango Smoothie", "Alphonso mango, yogurt and honey."),
        ("Fresh Orange Juice", "Oranges squeezed to order."),
        ("Lemonade", "House lemonade with fresh lemons."),
        ("Piña Colada Smoothie", "Pineapple and coconut blended with ice, no alcohol."),
        ("Iced Chai Latte", "Spiced black tea with cold milk over ice."),
    ]),
    "Bakery": ("BAK", "bakery", [
        ("Butter Croissant", "Flaky all-butter croissant baked every morning."),
        ("Pain au Chocolat", "Croissant dough rolled around dark chocolate batons."),
        ("Almond Croissant", "Twice-baked croissant filled with almond frangipane."),
        ("Blueberry Muffin", "Muffin packed with wild blueberries."),
        ("Banana Bread", "Moist banana bread with walnuts."),
        ("Cinnamon Roll", "Soft roll swirled with cinnamon sugar and cream cheese icing."),
        ("Sourdough Loaf", "Naturally leavened country loaf."),
        ("Baguette", "Classic French baguette with a crisp crust."),
        ("Everything Bagel", "Bagel topped with sesame, poppy seed, garlic and onion."),
        ("Plain Bagel", "Boiled and baked New York style bagel."),
        ("Scone", "Buttermilk scone served with jam."),
        ("Brioche Bun", "Rich egg and butter bun."),
        ("Focaccia", "Olive oil focaccia with rosemary and sea salt."),
        ("Chocolate Chip Cookie", "Chewy cookie with dark chocolate chunks."),
        ("Oatmeal Raisin Cookie", "Oat cookie with plump raisins."),
        ("Kouign-Amann", "Caramelised Breton pastry made with salted butter."),
    ]),
    "Desserts": ("DES", "dessert", [
        ("Crème Brûlée", "Vanilla custard with a burnt sugar crust."),
        ("Tiramisù", "Ladyfingers soaked in espresso layered with mascarpone."),
        ("New York Cheesecake", "Baked cheesecake on a graham cracker crust."),
        ("Carrot Cake", "Spiced carrot cake with cream cheese frosting."),
        ("Chocolate Fudge Brownie", "Dense brownie with a fudgy centre."),
        ("Lemon Tart", "Shortcrust tart filled with tangy lemon curd."),
        ("Macarons", "Assorted French almond meringue cookies."),
        ("Panna Cotta", "Set vanilla cream with berry coulis."),
        ("Éclair", "Choux pastry filled with vanilla crème pâtissière and glazed with chocolate."),
        ("Crêpe Suzette", "Thin crêpe with orange butter sauce."),
        ("Apple Strudel", "Flaky pastry filled with spiced apples."),
        ("Gelato", "Italian style ice cream made in house."),
    ]),
    "Breakfast": ("BRK", "single", [
        ("Avocado Toast", "Smashed avocado on sourdough with chili flakes."),
        ("Eggs Benedict", "Poached eggs and ham on an English muffin with hollandaise."),
        ("Açaí Bowl", "Açaí blended with banana, topped with granola and fruit."),
        ("Greek Yogurt Parfait", "Layers of yogurt, granola and berries."),
        ("Overnight Oats", "Oats soaked in almond milk with chia and maple."),
        ("Breakfast Burrito", "Scrambled eggs, chorizo, potatoes and cheese in a flour tortilla."),
        ("Huevos Rancheros", "Fried eggs on corn tortillas with salsa roja and black beans."),
        ("Buttermilk Pancakes", "Stack of three pancakes with maple syrup."),
        ("French Toast", "Brioche French toast with berries."),
        ("Shakshuka", "Eggs poached in spiced tomato and pepper sauce."),
    ]),
    "Sandwiches": ("SAN", "single", [
        ("Turkey Club", "Roast turkey, bacon, lettuce and tomato on toasted bread."),
        ("Caprese Panini", "Fresh mozzarella, tomato and basil pesto, pressed."),
        ("Croque Monsieur", "Ham and gruyère toastie with béchamel."),
        ("BLT", "Bacon, lettuce and tomato on sourdough."),
        ("Chicken Pesto Wrap", "Grilled chicken, pesto and spinach in a wrap."),
        ("Reuben", "Corned beef, sauerkraut, Swiss cheese and Russian dressing on rye."),
        ("Falafel Pita", "Falafel, hummus and pickled vegetables in a pita."),
        ("Bánh Mì", "Pork, pickled carrot, daikon, cilantro and jalapeño in a baguette."),
        ("Grilled Cheese", "Cheddar melted between buttered bread."),
        ("Tuna Melt", "Tuna salad and cheddar on grilled rye."),
        ("Jalapeño Poppers", "Cheese-stuffed jalapeños, breaded and fried."),
    ]),
    "Salads": ("SAL", "single", [
        ("Caesar Salad", "Romaine, parmesan, croutons and Caesar dressing."),
        ("Greek Salad", "Tomato, cucumber, olives, red onion and feta."),
        ("Quinoa Bowl", "Quinoa, roasted vegetables, chickpeas and tahini."),
        ("Niçoise Salad", "Tuna, green beans, potatoes, eggs and olives."),
        ("Cobb Salad", "Chicken, bacon, egg, avocado and blue cheese."),
        ("Kale Salad", "Kale, apple, pecans and cider vinaigrette."),
    ]),
    "Snacks": ("SNK", "grocery", [
        ("Sea Salt Potato Chips", "Kettle cooked chips with sea salt."),
        ("Salt & Vinegar Chips", "Kettle chips with malt vinegar."),
        ("Trail Mix", "Peanuts, raisins, almonds and chocolate candies."),
        ("Dark Chocolate Bar", "70% cacao dark chocolate."),
        ("Milk Chocolate Bar", "Creamy milk chocolate."),
        ("Granola Bar", "Oats, honey and almonds."),
        ("Protein Bar", "Peanut butter protein bar with 20 g of protein."),
        ("Salted Pretzels", "Crunchy twisted pretzels."),
        ("Roasted Almonds", "Dry roasted almonds."),
        ("Beef Jerky", "Teriyaki beef jerky."),
        ("Rice Crackers", "Lightly salted rice crackers."),
        ("Popcorn", "Butter popcorn, ready to eat."),
        ("Hummus Cups", "Classic hummus snack cups."),
    ]),
    "Dairy": ("DAI", "grocery", [
        ("Whole Milk", "Fresh pasteurised whole milk."),
        ("Oat Milk", "Barista edition oat drink."),
        ("Almond Milk", "Unsweetened almond drink."),
        ("Greek Yogurt", "Plain strained yogurt."),
        ("Salted Butter", "Churned butter with sea salt."),
        ("Cheddar Cheese", "Aged sharp cheddar."),
        ("Gruyère", "Swiss cave-aged gruyère cheese."),
        ("Brie", "Soft ripened French brie."),
        ("Fresh Mozzarella", "Fior di latte mozzarella."),
        ("Heavy Cream", "Whipping cream, 36% fat."),
        ("Large Eggs", "Free range large brown eggs."),
        ("Crème Fraîche", "Cultured cream."),
    ]),
    "Produce": ("PRO", "produce", [
        ("Bananas", "Ripe Cavendish bananas."),
        ("Hass Avocados", "Ready to eat avocados."),
        ("Gala Apples", "Crisp sweet apples."),
        ("Lemons", "Unwaxed lemons."),
        ("Limes", "Juicy Persian limes."),
        ("Strawberries", "Sweet local strawberries."),
        ("Blueberries", "Fresh blueberries."),
        ("Baby Spinach", "Washed baby spinach leaves."),
        ("Roma Tomatoes", "Plum tomatoes for sauces."),
        ("Yellow Onions", "Cooking onions."),
        ("Garlic", "Whole garlic bulbs."),
        ("Jalapeños", "Fresh green jalapeño peppers."),
        ("Cilantro", "Fresh coriander bunch."),
        ("Russet Potatoes", "Baking potatoes."),
    ]),
    "Pantry": ("PAN", "grocery", [
        ("Extra Virgin Olive Oil", "Cold pressed Italian olive oil."),
        ("Balsamic Vinegar", "Aged balsamic vinegar of Modena."),
        ("Spaghetti", "Bronze-cut durum wheat pasta."),
        ("Penne Rigate", "Ridged pasta tubes."),
        ("Basmati Rice", "Long grain aromatic rice."),
        ("Jasmine Rice", "Thai fragrant rice."),
        ("Rolled Oats", "Old fashioned oats."),
        ("Maple Syrup", "Pure Canadian maple syrup, grade A."),
        ("Wildflower Honey", "Raw wildflower honey."),
        ("Peanut Butter", "Crunchy peanut butter, no added sugar."),
        ("Strawberry Jam", "Strawberry preserves."),
        ("Marinara Sauce", "Tomato and basil pasta sauce."),
        ("Chickpeas", "Canned chickpeas."),
        ("Black Beans", "Canned black beans."),
        ("Coconut Milk", "Full fat coconut milk."),
        ("Sriracha", "Chili garlic hot sauce."),
        ("Dijon Mustard", "Smooth Dijon mustard."),
        ("Sea Salt Flakes", "Flaky sea salt."),
        ("Whole Bean Coffee", "House espresso blend, whole beans."),
        ("Ground Coffee", "Medium roast ground coffee for drip brewers."),
        ("Earl Grey Tea Bags", "Box of 20 Earl Grey tea bags."),
        ("Matcha Powder", "Culinary grade matcha."),
    ]),
    "Frozen": ("FRZ", "grocery", [
        ("Frozen Pizza Margherita", "Stone baked pizza with tomato and mozzarella."),
        ("Vanilla Ice Cream", "Madagascar vanilla ice cream."),
        ("Frozen Peas", "Garden peas."),
        ("Frozen Berries", "Mixed berries for smoothies."),
        ("Vegetable Dumplings", "Steamed vegetable gyoza."),
        ("Chicken Nuggets", "Breaded chicken breast nuggets."),
        ("Mango Sorbet", "Dairy free mango sorbet."),
    ]),
    "Beverages": ("BEV", "grocery", [
        ("Sparkling Water", "Naturally carbonated mineral water."),
        ("Still Water", "Spring water."),
        ("Coca-Cola", "Classic cola."),
        ("Diet Coke", "Sugar free cola."),
        ("Ginger Ale", "Dry ginger ale."),
        ("Kombucha", "Raw fermented tea, ginger lemon flavour."),
        ("Coconut Water", "Pure coconut water."),
        ("Energy Drink", "Sugar free energy drink."),
        ("Orange Juice", "Not from concentrate orange juice."),
        ("Apple Juice", "Pressed apple juice."),
        ("Iced Tea", "Peach iced tea."),
    ]),
    "Household": ("HOU", "grocery", [
        ("Paper Towels", "Two-ply paper towel rolls."),
        ("Dish Soap", "Lemon scented washing-up liquid."),
        ("Laundry Detergent", "Concentrated liquid detergent."),
        ("Trash Bags", "Heavy duty 13 gallon bags."),
        ("Aluminum Foil", "Kitchen foil."),
        ("Sponges", "Non-scratch scrub sponges."),
        ("All-Purpose Cleaner", "Multi-surface spray cleaner."),
        ("Light Bulbs", "LED A19 bulbs, warm white."),
        ("AA Batteries", "Alkaline AA batteries."),
        ("Matches", "Safety matches."),
    ]),
    "Personal Care": ("PER", "grocery", [
        ("Toothpaste", "Fluoride toothpaste, fresh mint."),
        ("Toothbrush", "Soft bristle toothbrush."),
        ("Shampoo", "Everyday shampoo for all hair types."),
        ("Conditioner", "Moisturising hair conditioner."),
        ("Bar Soap", "Oatmeal and honey soap."),
        ("Hand Sanitizer", "Alcohol based hand sanitiser gel."),
        ("Sunscreen SPF 50", "Broad spectrum sunscreen lotion."),
        ("Lip Balm", "Beeswax lip balm."),
        ("Deodorant", "Aluminium free deodorant."),
    ]),
    "Merchandise": ("MER", "merch", [
        ("Logo Coffee Mug", "Ceramic mug with our logo, 12 oz."),
        ("Travel Tumbler", "Insulated stainless steel tumbler with lid."),
        ("Reusable Cup", "Glass cup with cork sleeve."),
        ("Logo T-Shirt", "Organic cotton t-shirt with the cafe logo."),
        ("Hoodie", "Heavyweight fleece hoodie."),
        ("Tote Bag", "Canvas tote bag."),
        ("Baseball Cap", "Embroidered six-panel cap."),
        ("Gift Card", "Reloadable gift card."),
        ("Enamel Pin", "Coffee cup enamel pin."),
    ]),
    "Kitchenware": ("KIT", "merch", [
        ("French Press", "Eight cup glass French press."),
        ("Pour Over Dripper", "Ceramic cone dripper."),
        ("Burr Grinder", "Conical burr coffee grinder."),
        ("Moka Pot", "Stovetop espresso maker."),
        ("Milk Frother", "Handheld electric milk frother."),
        ("Kettle", "Gooseneck pour over kettle."),
        ("Paper Filters", "Unbleached cone coffee filters."),
        ("Cast Iron Skillet", "Pre-seasoned 10 inch skillet."),
        ("Chef's Knife", "Eight inch stainless chef knife."),
        ("Cutting Board", "End grain maple cutting board."),
    ]),
    "Stationery": ("STA", "merch", [
        ("Spiral Notebook", "College ruled notebook."),
        ("Ballpoint Pens", "Blue ballpoint pens."),
        ("Greeting Card", "Blank greeting card with envelope."),
        ("Sticky Notes", "Yellow sticky notes."),
        ("Wrapping Paper", "Recyclable gift wrap."),
    ]),
    "Pet Supplies": ("PET", "grocery", [
        ("Dog Treats", "Peanut butter dog biscuits."),
        ("Cat Food", "Salmon pâté for adult cats."),
        ("Dog Food", "Dry kibble with chicken and rice."),
        ("Cat Litter", "Clumping clay litter."),
        ("Chew Toy", "Durable rubber chew toy."),
    ]),
}

VARIANTS = {
    "drink": [(n, f"{oz} oz", oz) for n, oz in DRINK],
    "bakery": [("Single", None, "1"), ("Box of 6", None, "6")],
    "dessert": [("Slice", None, "SL"), ("Whole", None, "WH")],
    "single": [("Regular", None, "R")],
    "produce": [("Each", None, "EA"), ("Per lb", None, "LB")],
    "grocery": [("Regular", None, "R")],
    "merch": None,
}
MERCH_VARIANTS = {
    "Logo Coffee Mug": ["Black", "White"], "Travel Tumbler": ["16 oz", "20 oz"],
    "Logo T-Shirt": ["S", "M", "L", "XL"], "Hoodie": ["S", "M", "L", "XL"],
    "Gift Card": ["$25", "$50", "$100"], "Ballpoint Pens": ["Pack of 10"],
    "Paper Filters": ["#2", "#4"], "Cutting Board": ["Small", "Large"],
}
# Grocery items with more than one size.
GROCERY_SIZES = {
    "Whole Milk": ["1 qt", "1/2 gal", "1 gal"], "Oat Milk": ["32 oz", "64 oz"],
    "Greek Yogurt": ["5.3 oz", "32 oz"], "Basmati Rice": ["2 lb", "10 lb"],
    "Whole Bean Coffee": ["12 oz", "2 lb"], "Extra Virgin Olive Oil": ["500 ml", "1 l"],
    "Sparkling Water": ["Single", "12 pack"], "Coca-Cola": ["12 oz can", "20 oz bottle", "12 pack"],
    "Dog Food": ["5 lb", "15 lb"], "Large Eggs": ["Half dozen", "Dozen"],
}
# Items sold without variations in the catalog (the index gets one item-level document).
NO_VARIATIONS = {"Affogato", "Macarons", "Kouign-Amann", "Gift Card", "Enamel Pin", "Matches"}
# Items also listed in a second category.
EXTRA_CATEGORIES = {
    "Whole Bean Coffee": ["Coffee"], "Ground Coffee": ["Coffee"], "Earl Grey Tea Bags": ["Tea"],
    "Matcha Powder": ["Tea"], "Oat Milk": ["Beverages"], "Iced Tea": ["Cold Drinks"],
    "French Press": ["Coffee"], "Logo Coffee Mug": ["Kitchenware"],
}


def slug(text):
    text = unicodedata.normalize("NFD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").upper()


def code(name):
    words = [w for w in re.split(r"[^A-Za-z]+", slug(name)) if w]
    if len(words) == 1:
        return words[0][:6]
    return "".join(w[:3] for w in words[:2])


upc_serial = [100]


def next_upc():
    upc_serial[0] += 37
    body = "0" + "49000" + f"{upc_serial[0]:05d}"  # 11 digits: number system, maker, product
    odd = sum(int(d) for d in body[0::2])
    even = sum(int(d) for d in body[1::2])
    check = (10 - (odd * 3 + even) % 10) % 10
    return body + str(check)


def main():
    categories = [{"id": "C-" + slug(n), "name": n} for n in CATEGORIES]
    items = []
    for category, (prefix, kind, entries) in CATEGORIES.items():
        for name, description in entries:
            item_id = "I-" + slug(name)
            category_ids = ["C-" + slug(category)] + ["C-" + slug(c) for c in EXTRA_CATEGORIES.get(name, [])]
            base_sku = f"{prefix}-{code(name)}"
            retail = kind in ("grocery", "produce", "merch")
            if name in NO_VARIATIONS:
                variations = []
            elif name in GROCERY_SIZES:
                variations = [(s, s, slug(s)) for s in GROCERY_SIZES[name]]
            elif kind == "merch":
                variations = [(s, s, slug(s)) for s in MERCH_VARIANTS.get(name, ["Regular"])]
            else:
                variations = [(n, n if oz is None else f"{n} {oz}", s) for n, oz, s in VARIANTS[kind]]
                variations = [(n, n, s) for n, _, s in variations]
            out = []
            for vname, _, vcode in variations:
                out.append({
                    "id": f"V-{slug(name)}-{slug(vname)}",
                    "name": vname,
                    "sku": f"{base_sku}-{vcode}",
                    "gtin": next_upc() if retail else None,
                })
            items.append({
                "id": item_id, "name": name, "categoryIds": category_ids,
                "description": description, "variations": out,
            })
    with open("catalog.json", "w") as f:
        json.dump({"categories": categories, "items": items}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(items), "items,", sum(max(1, len(i["variations"])) for i in items), "documents")


if __name__ == "__main__":
    main()
